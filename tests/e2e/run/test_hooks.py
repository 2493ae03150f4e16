"""Hooks added to compiled modules late, through the installed command on real torch: a hook compiled
code skips is reported with its line and the flag that makes it run; hooks that run are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_guarddiag
from tests.corpus_runs import corpus_run

CORPUS = ROOT / "tests" / "corpus"
FLAG = "skip_nnmodule_hook_guards=false"

pytestmark = pytest.mark.torch


def _run(script: str, workdir: Path, *options: str) -> tuple[dict, dict, str]:
    """``guarddiag run`` of a corpus script: its run record, torch's own totals and the command's stdout. Without
    options it is the corpus run test_corpus.py reads too, made once per session (tests/corpus_runs.py)."""
    if not options:
        record, truth, out = corpus_run(script)
        return record, truth["totals"], out
    env = {"PYTHONPATH": str(ROOT / "tests" / "oracle"), "GUARDDIAG_ORACLE_TRUTH": str(workdir / "truth.json")}
    proc = run_guarddiag("run", str(CORPUS / script), "--out", str(workdir / "run.json"), *options, cwd=workdir, env=env)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    truth = json.loads((workdir / "truth.json").read_text())["totals"]
    return json.loads((workdir / "run.json").read_text()), truth, proc.stdout


def test_a_hook_added_after_the_first_compiled_call_is_reported_with_its_line_and_the_flag(tmp_path: Path):
    record, _, out = _run("late_hook.py", tmp_path)
    assert "activations captured by the hook: 0" in out
    assert (
        "warning: a forward hook registered at late_hook.py:19 on `Linear` (`0` in the compiled `Sequential`) "
        "after torch.compile had compiled it ran 0 of 3 calls: compiled code does not run hooks added later "
        "(skip_nnmodule_hook_guards=True, torch's default); register hooks before the first call, "
        f"or run with --flag {FLAG} (the module then recompiles when hooks change)"
    ) in out
    [hook] = record["late_hooks"]
    assert (hook["kind"], hook["line"], hook["calls"], hook["ran"], hook["traced"]) == ("forward", 19, 3, 0, 0)
    assert Path(hook["file"]).name == "late_hook.py"


@pytest.mark.slow
def test_with_the_flag_off_the_late_hook_runs_and_nothing_is_reported(tmp_path: Path):
    record, truth, out = _run("late_hook.py", tmp_path, "--flag", FLAG)
    assert "activations captured by the hook: 3" in out
    assert "hook registered" not in out
    [hook] = record["late_hooks"]
    assert hook["traced"] > 0 and hook["calls"] == 3
    # Watching the hook changes no compile: guarddiag's count is torch's own.
    assert record["totals"]["compiles"] == truth["ok"] + truth["failed"]


@pytest.mark.slow
def test_hooks_registered_before_the_first_compiled_call_are_not_reported(tmp_path: Path):
    record, truth, out = _run("hook_before_compile.py", tmp_path)
    assert "forward hook ran: 3 pre-hook ran: 3" in out
    assert "hook registered" not in out
    # The pre-hook went on after torch.compile and another compile: watched, traced into the graph.
    [hook] = record["late_hooks"]
    assert (hook["kind"], hook["path"], hook["calls"], hook["ran"]) == ("forward_pre", "2", 3, 0)
    assert hook["traced"] > 0
    assert record["totals"]["compiles"] == truth["ok"] + truth["failed"]


@pytest.mark.slow
def test_a_late_hook_on_a_module_outside_compiled_code_is_not_watched(tmp_path: Path):
    record, _, out = _run("late_hook_uncompiled.py", tmp_path)
    assert "outputs seen by the head's hook: 3" in out
    assert "hook registered" not in out
    assert record["late_hooks"] == []
