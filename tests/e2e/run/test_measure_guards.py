"""run --measure-guards through the installed command on real torch (eager backend): each function's calls
counted from torch's own profiler events, the figures in the record and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guarddiag.render.words import micros
from tests.conftest import FIXTURES, run_guarddiag

pytestmark = pytest.mark.torch
LOOKUPS = FIXTURES / "guard_time" / "lookups.py"


def test_each_function_gets_its_calls_and_what_their_lookups_cost(tmp_path: Path):
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", "--measure-guards", str(LOOKUPS), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["guards_measured"] is True
    measured = {f["name"]: f.get("guard_times", []) for f in record["functions"]}
    # lookups.py's docstring: the calls that ran compiled code, the lookups that missed and recompiled.
    counts = {name.partition("_at_")[0]: [(g["calls"], g["misses"]) for g in times] for name, times in measured.items()}
    assert counts == {"step": [(80, 1)], "broken": [(20, 0)], "torch_dynamo_resume_in_broken": [(20, 0)], "limited": [(2, 1)]}
    assert [(g["calls"], g["timed"], g["median_us"]) for g in measured["limited"]] == [(2, 0, None)]
    for name in ("step", "broken"):
        (g,) = measured[name]
        assert g["timed"] == g["calls"] - (1 + g["misses"])  # an entry's first call follows its compile
        assert 0.1 < g["p10_us"] <= g["median_us"] <= g["p90_us"] <= g["max_us"] < 10_000
        assert g["total_us"] >= g["median_us"] * g["timed"] / 2
    (step,) = [f for f in record["functions"] if f["name"] == "step"]
    torch_us = step["torch_metrics"][-1]["guard_latency_us"]
    assert f"guard check measured at run time: 80 calls, median {micros(step['guard_times'][0]['median_us'])}" in proc.stdout
    assert f"against torch's compile-time {micros(torch_us)} for its last entry" in proc.stdout
    assert "USDT" not in proc.stderr + proc.stdout  # kineto's start/stop lines go to the run's log


def test_without_the_option_nothing_is_measured_or_said(tmp_path: Path):
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", str(LOOKUPS), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    assert "guards_measured" not in record and not any("guard_times" in f for f in record["functions"])
    assert "measured at run time" not in proc.stdout
    assert not list(tmp_path.glob(".guarddiag/runs/*/guard_time.json"))


@pytest.mark.slow
def test_a_script_running_its_own_profiler_is_told_apart_from_one_with_no_calls(tmp_path: Path):
    script = tmp_path / "profiled.py"
    script.write_text(
        "import torch\n"
        "f = torch.compile(lambda x: x + 1, backend='eager')\n"
        "x = torch.ones(3)\n"
        "for _ in range(3):\n    f(x)\n"
        "with torch.profiler.profile():\n    f(x)\n"
        "print('done')\n"
    )
    proc = run_guarddiag("run", "--measure-guards", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "done" in proc.stdout
    assert "--measure-guards measured nothing: the script ran torch's profiler itself" in proc.stdout
    assert "no call ran its compiled code" not in proc.stdout


@pytest.mark.slow
def test_calls_from_another_thread_are_said_not_measured(tmp_path: Path):
    """torch's profiler records the thread that started it: the script's main thread."""
    script = tmp_path / "threaded.py"
    script.write_text(
        "import threading, torch\n"
        "f = torch.compile(lambda x: x + 1, backend='eager')\n"
        "g = torch.compile(lambda x: x * 2, backend='eager')\n"
        "x = torch.ones(3)\n"
        "for _ in range(5):\n    f(x)\n"
        "t = threading.Thread(target=lambda: [g(x) for _ in range(7)])\n"
        "t.start()\nt.join()\n"
    )
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", "--measure-guards", str(script), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    calls = sorted(sum(g["calls"] for g in f.get("guard_times", [])) for f in json.loads(out.read_text())["functions"])
    assert calls == [0, 5]
    assert proc.stdout.count("no call ran its compiled code in the script's main thread") == 1
