"""``run --trace`` keeps torch's TORCH_TRACE folder in the run folder, and the report shows torch's own figures,
through the installed command with real torch (eager backend; issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_guarddiag

pytestmark = pytest.mark.torch
CONTEXTS = FIXTURES / "torchmetrics" / "contexts.py"


def test_run_trace_keeps_a_trace_folder_named_in_the_footer_and_the_report_shows_torchs_figures(tmp_path: Path):
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", "--trace", str(CONTEXTS), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    trace = Path(record["trace_path"])
    assert trace == Path(record["log_path"]).with_name("trace")
    # torch's structured trace of the script's process: a JSON envelope per glog-prefixed line.
    (written,) = (tmp_path / trace).glob("dedicated_log_torch_trace_*.log")
    first = written.read_text().splitlines()[0]
    assert first.startswith("V") and json.loads(first[first.index("{"):])
    assert proc.stdout.rstrip().splitlines()[-1] == f"torch trace: {trace} (open it with tlparse, or attach it to a PyTorch issue)"
    # torch's own figures per compile, its last entry's in the report, the script's recompile contexts.
    (step,) = record["functions"]
    assert [m["user_contexts"] for m in step["torch_metrics"]] == [["epoch 0"], ["epoch 2"], ["epoch 3"]]
    assert "torch: 2 entries in the cache before its last compile" in proc.stdout
    assert record["guard_cost"][0]["last_entry"]["torch_guard_count"] == 10
    assert "the script's recompile contexts: epoch 0; epoch 2; epoch 3" in proc.stdout
    assert "torch's own record of recompile" not in proc.stdout  # torch's reasons agree with the log's

