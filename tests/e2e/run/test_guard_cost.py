"""What each function's guards cost, through the installed command on a real run (eager backend; issue 28):
the report's figures are torch's own for the same run, and a trace of the run gives the same guards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_guarddiag

pytestmark = pytest.mark.torch
BLOCKS = FIXTURES / "torchmetrics" / "guard_blocks.py"


def test_the_run_report_gives_each_entrys_guards_and_time_as_torch_measured_them(tmp_path: Path):
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", "--trace", str(BLOCKS), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    (f,) = record["functions"]
    entries, metrics = f["guard_entries"], [m for m in f["torch_metrics"] if m["guard_count"] is not None]
    assert [e["compile_id"] for e in entries] == ["0/0", "0/1", "0/2"] == [m["compile_id"] for m in metrics]
    log = Path(record["log_path"]).read_text()
    logged = [float(line.split("= ")[1].split()[0]) for line in log.splitlines() if "Guard eval latency = " in line]
    assert [e["latency_us"] for e in entries] == logged
    for e, m in zip(entries, metrics, strict=True):
        # torch's record holds the same measurement in whole microseconds, and the tree's leaves are its guards here.
        assert abs(e["latency_us"] - m["guard_latency_us"]) < 1 and e["leaves"] == m["guard_count"] > 200
        top = e["origins"][0]
        assert (top["source"], top["members"], top["rest"]) == ("L['self']._modules['blocks']", 6, False)
    (cost,) = record["guard_cost"]
    assert cost["per_call"]["low_us"] == min(logged) and cost["per_call"]["high_us"] == pytest.approx(sum(logged))
    assert "forward (torchmetrics/guard_blocks.py:29): 3 cache entries of" in proc.stdout
    assert "where the guards of its last entry are: `self.blocks` (6 items, about" in proc.stdout
    # parse of the run's trace: the same guards, torch's same figures.
    traced = run_guarddiag("parse", record["trace_path"], "-f", "json", cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr[-2000:]
    (t,) = json.loads(traced.stdout)["functions"]
    assert t["guard_entries"] == entries and t["torch_metrics"] == f["torch_metrics"]
