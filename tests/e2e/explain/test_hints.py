"""Every kind of code or config hint guarddiag gives, applied to a real script: the recompile it is for goes.

For each case a corpus script (tests/corpus/) runs under ``guarddiag run``; ``guarddiag explain --format json``
gives the hint for the function; the lines its JSON says to write (or those of the choice named) are applied
to a copy of the script by tests/apply_hints.py, mechanically, as the JSON places them; the copy runs, and
torch's own compilation metrics (tests/oracle/_truth.py) must show no recompile of the function on the
object any more, fewer compiles, and the script running to its end.

The fast form (in ``make test``) runs the scripts on the eager backend (GUARDDIAG_CORPUS_BACKEND, read by
``_truth``); ``make test-inductor`` runs the same cases on the inductor backend the scripts are written for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apply_hints import apply_lines
from tests.conftest import ROOT, in_make_test, run_guarddiag, torch_truth
from tests.corpus_runs import corpus_run

CORPUS = ROOT / "tests" / "corpus"
ORACLE = ROOT / "tests" / "oracle"
LEFT = {("allow_unspec_int_on_nn_module", None): 1}

# (script, the compiled function, the hint id, the choice applied (None: the hint's own lines), the object
# whose recompiles must go). allow_unspec_int_on_nn_module makes a module's int one like others: automatic
# dynamic still recompiles it once (LEFT), the dynamic-sources choice not even that.
CASES = [
    ("regional_blocks.py", "forward", "allow_unspec_int_on_nn_module", None, "self.layer_idx"),
    ("regional_blocks.py", "forward", "allow_unspec_int_on_nn_module", "dynamic_sources", "self.layer_idx"),
    ("dataclass_config.py", "sample_scores", "dynamic_sources", None, "cfg.top_k"),
    ("noise_scheduler.py", "denoise", "dynamic_sources", None, "sched.t"),
    ("lr_schedule.py", "train_step", "float_as_tensor", None, "lr"),
    ("ragged_dataloader.py", "train_step", "maybe_mark_dynamic", None, "xb"),
    ("ragged_dataloader.py", "train_step", "maybe_mark_dynamic", "dynamic_sources", "xb"),
    ("padded_batches.py", "forward", "maybe_mark_dynamic", None, "ids"),
    ("stance_server.py", "inner", "static_sizes", "dynamic_sources", "args"),
    ("last_batch_one.py", "score", "size_one", None, "xb"),
    ("kv_cache_decode.py", "forward", "size_one", None, "ids"),
    ("history_append.py", "train_step", "mutated_argument", None, "history"),
    ("train_logging.py", "train_step", "move_out_of_compiled", None, "step"),
]
# make test applies the hint of one script, a batch size, as lines (maybe_mark_dynamic) and as the config choice
# (dynamic sources); make test-slow applies every case.
SAMPLE = {"ragged_dataloader.py"}
BACKENDS = [
    pytest.param("eager", id="eager"),
    pytest.param(
        "inductor",
        id="inductor",
        marks=pytest.mark.inductor,
    ),
]

pytestmark = pytest.mark.torch


def _env(backend: str, truth: Path) -> dict[str, str]:
    env = {"PYTHONPATH": str(ORACLE), "GUARDDIAG_ORACLE_TRUTH": str(truth), "GUARDDIAG_CORPUS_BACKEND": ""}
    if backend != "inductor":
        env["GUARDDIAG_CORPUS_BACKEND"] = backend
    return env


def _hint(script: str, function: str, hint: str, backend: str, workdir: Path) -> tuple[dict, dict]:
    """guarddiag's hint of that id for the function, and torch's account of the run it came from (the corpus
    script's run, shared with tests/e2e/run/test_corpus.py)."""
    workdir.mkdir(parents=True, exist_ok=True)
    run = corpus_run(script, backend=backend)
    explained = run_guarddiag("explain", run.record["log_path"], "--format", "json", cwd=workdir)
    assert explained.returncode == 0, explained.stderr[-3000:]
    hints = [h for f in json.loads(explained.stdout)["functions"] if f["name"] == function for h in f["hints"]]
    found = [h for h in hints if h["id"] == hint]
    assert found, f"{script}: no {hint} hint for {function}: {[h['id'] for h in hints]}"
    return found[0], run.truth


def _run_copy(text: str, backend: str, workdir: Path, name: str) -> dict:
    """Run the modified copy as a user would (python SCRIPT); torch's account of it."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / name
    path.write_text(text, encoding="utf-8")
    truth = workdir / "truth.json"
    env = {**os.environ, **_env(backend, truth)}
    proc = subprocess.run([sys.executable, str(path)], cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"the script with the hint applied fails:\n{text}\n{proc.stderr[-3000:]}"
    return json.loads(truth.read_text())


def _function(truth: dict, name: str) -> tuple[int, list[str]]:
    """Compiles of the function torch counts, and its recompile reasons (torch's own words)."""
    found = [f for f in truth["functions"] if f["co_name"] == name]
    return sum(f["ok"] + f["failed"] for f in found), [r for f in found for r in f["recompile_reasons"]]


def _about(reasons: list[str], name: str) -> list[str]:
    """The reasons whose failing guard names the object: ``cfg.top_k == 3``, ``tensor 'xb' size mismatch ...``
    (not the user's line torch quotes after ``#``, which may name anything)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w])")
    return [r for r in reasons if pattern.search(r.partition("\n")[0].partition("  #")[0])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("script", "function", "hint", "choice", "subject"), in_make_test(CASES, SAMPLE), ids=[f"{c[0]}-{c[3] or c[2]}" for c in CASES]
)
def test_the_hint_applied_removes_its_recompile(
    script: str, function: str, hint: str, choice: str | None, subject: str, backend: str, tmp_path: Path
):
    found, before = _hint(script, function, hint, backend, tmp_path / "before")
    compiles, reasons = _function(before, function)
    assert _about(reasons, subject), f"{script}: torch names no recompile on `{subject}`: {reasons}"
    lines = found["lines"] if choice is None else next(c["lines"] for c in found["choices"] if c["id"] == choice)
    assert lines, f"{script}: the {choice or hint} of the hint has no line to write: {found}"
    fixed = apply_lines((CORPUS / script).read_text(encoding="utf-8"), lines)
    after = _run_copy(fixed, backend, tmp_path / "after", script)
    compiles_after, reasons_after = _function(after, function)
    left = LEFT.get((hint, choice), 0)
    assert len(_about(reasons_after, subject)) <= left < len(_about(reasons, subject)), f"`{subject}`:\n{fixed}\n{reasons_after}"
    assert compiles_after < compiles, (compiles, compiles_after, reasons_after)
    total = sum(f["ok"] + f["failed"] for f in after["functions"])
    assert total < sum(f["ok"] + f["failed"] for f in before["functions"]), after["functions"]


@pytest.mark.slow
def test_two_hints_that_set_one_setting_applied_together_remove_both_recompiles(tmp_path: Path):
    # tests/fixtures/causes/two_dims.py: a padded length, then a short last batch; one hint for each, each
    # with the dynamic-sources choice. A user who writes both choices' lines (a later one replaces an earlier
    # value) gets both recompiles removed.
    script = ROOT / "tests" / "fixtures" / "causes" / "two_dims.py"
    proc = run_guarddiag("run", str(script), "--out", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    explained = run_guarddiag("explain", "run.json", "--format", "json", cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr[-3000:]
    (hints,) = [f["hints"] for f in json.loads(explained.stdout)["functions"] if f["name"] == "classify"]
    lines = [line for h in hints for c in h["choices"] if c["id"] == "dynamic_sources" for line in c["lines"]]
    assert len(hints) == len(lines) == 2
    fixed = tmp_path / "two_dims.py"
    fixed.write_text(apply_lines(script.read_text(encoding="utf-8"), lines), encoding="utf-8")
    assert list(torch_truth(script, tmp_path).values()) == [3]
    assert list(torch_truth(fixed, tmp_path).values()) == [1]
