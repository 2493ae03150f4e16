"""check says when the baseline was recorded on another torch (or does not say which), on runs from real logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guarddiag import baseline as baseline_io
from guarddiag.config import Settings
from guarddiag.gate import evaluate
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines
from guarddiag.render.gate import render_check
from guarddiag.report import run_reports
from tests.conftest import LOGS


def _run(log: str, torch: str | None) -> Run:
    functions, stats = build_from_lines((LOGS / log).read_text().splitlines(), roles=lambda *_: {})
    return Run(functions=functions, parse=stats, torch_version=torch)


@pytest.mark.parametrize(
    ("recorded", "now", "says"),
    [
        ("2.12.0", "2.13.0+cpu", "note: torch changed since the baseline, from 2.12.0 to 2.13.0+cpu;"),
        (None, "2.13.0+cpu", "note: the baseline does not say which torch recorded it (torch now: 2.13.0+cpu);"),
        ("2.12.0", None, "note: the run records do not say which torch ran them (the baseline's: 2.12.0);"),
    ],
)
def test_a_regression_against_another_or_an_unknown_torch_says_so(tmp_path: Path, recorded, now, says):
    before = _run("torch-2.4.1/fresh_module_instance.inline1.log", recorded)  # 1 compile
    after = _run("torch-2.4.1/fresh_module_instance.log", now)  # 12 compiles
    result = evaluate(run_reports({"m.py": after}), baseline_io.from_runs({"m.py": before}, tmp_path), Settings(root=tmp_path))
    assert says in render_check(result, "table") and says in render_check(result, "markdown")
    assert json.loads(render_check(result, "json"))["torch"] == {"baseline": recorded, "now": now}


def test_a_torch_version_from_another_jobs_record_cannot_start_a_line(tmp_path: Path):
    before = _run("torch-2.4.1/fresh_module_instance.inline1.log", "2.12.0\n::error file=x::owned\u202e")
    after = _run("torch-2.4.1/fresh_module_instance.log", "2.13.0")
    result = evaluate(run_reports({"m.py": after}), baseline_io.from_runs({"m.py": before}, tmp_path), Settings(root=tmp_path))
    text = render_check(result, "table")
    assert "2.12.0\\n::error file=x::owned\\u202e" in text
    assert not any(line.startswith("::") for line in text.splitlines())


def test_the_same_torch_says_nothing(tmp_path: Path):
    before = _run("torch-2.4.1/fresh_module_instance.inline1.log", "2.13.0")
    after = _run("torch-2.4.1/fresh_module_instance.log", "2.13.0")
    result = evaluate(run_reports({"m.py": after}), baseline_io.from_runs({"m.py": before}, tmp_path), Settings(root=tmp_path))
    assert result.torch is None and result.failures
    assert "note: torch" not in render_check(result, "table") and "which torch" not in render_check(result, "table")
