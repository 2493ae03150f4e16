"""guarddiag on realistic scripts (tests/corpus/): counts equal torch's, and each fix guarddiag names
removes the recompile it is for."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, in_make_test, recorded_subject, run_guarddiag, truth_counts
from tests.corpus_runs import corpus_run

CORPUS = ROOT / "tests" / "corpus"
SCRIPTS = sorted(p.name for p in CORPUS.glob("*.py"))

pytestmark = pytest.mark.torch


def _needs(script: str) -> None:
    if script.startswith("hf_") and importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed here: `make test-transformers` installs the pinned version and runs this")


def _counts_by_guarddiag(run: dict) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = {}
    for f in run["functions"]:
        counts[(f["name"], f["line"])] = counts.get((f["name"], f["line"]), 0) + f["compiles"]
    return counts


# make test runs the scripts whose first cause and fix are checked below (a tensor size, a float, a container);
# make test-slow runs the rest of the corpus.
SAMPLE = {"gpt_generate.py", "lr_schedule.py", "containers.py"}
# The scripts written for the default inductor backend run on it too, in make test-inductor.
ON_INDUCTOR = [s for s in SCRIPTS if "backend=" not in (CORPUS / s).read_text(encoding="utf-8")]
BACKENDS = [(s, "eager") for s in SCRIPTS] + [pytest.param(s, "inductor", marks=pytest.mark.inductor) for s in ON_INDUCTOR]


@pytest.mark.parametrize(("script", "backend"), in_make_test(BACKENDS, SAMPLE))
def test_counts_equal_torch(script: str, backend: str, tmp_path: Path):
    _needs(script)
    run, truth, _ = corpus_run(script, backend=backend)
    assert _counts_by_guarddiag(run) == truth_counts(truth)
    assert run["totals"]["compiles"] == truth["totals"]["compiles"]


FIXED = [s for s in SCRIPTS if "CORPUS_FIX=1" in (CORPUS / s).read_text(encoding="utf-8")]


@pytest.mark.parametrize("script", in_make_test(FIXED, {"lr_schedule.py"}))
def test_the_fix_removes_the_recompile(script: str, tmp_path: Path):
    _needs(script)
    before, _, _ = corpus_run(script)
    after, truth, _ = corpus_run(script, fix=True)
    assert before["totals"]["recompiles"] > 0
    assert after["totals"]["recompiles"] < before["totals"]["recompiles"], after["functions"]
    assert _counts_by_guarddiag(after) == truth_counts(truth)


# --- the answers: the first cause, its fix, and the names (#13) -------------------------------------------------
# Per script: the first cause the report gives for its recompiling function, and the fix explain names for it
# (in its advice or in a line it says to write). The fix is what the script applies under CORPUS_FIX=1
# (test_the_fix_removes_the_recompile); tests/e2e/explain/test_hints.py applies the lines themselves.
FIRST_CAUSES = {
    "gpt_generate.py": ("tensor", "size of tensor argument `idx` at dim 1", "torch._dynamo.maybe_mark_dynamic(idx, 1)"),
    "lr_schedule.py": ("value", "value of argument `lr`", "torch.tensor(lr)"),
    "containers.py": ("container", "length of argument `feats`", "pass the same keys/length every time"),
}


def _explain(log_path: str, cwd: Path) -> dict:
    proc = run_guarddiag("explain", log_path, "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


# What the report says about each script's recompiling function beyond its cause (#13 items 6 and 7): the dims
# and numbers automatic dynamic made dynamic (other sizes and values reuse an entry while its guards hold), the
# user's line behind the guard, and how much of the compile time went to recompiles.
REPORT_LINES = {
    "gpt_generate.py": ["  dynamic after the run: `idx` dim 1 ("],
    "lr_schedule.py": [
        "  dynamic after the run: `lr` (its value) (",
        "      at tests/corpus/lr_schedule.py:20 in train_step: p.sub_(lr * (g + weight_decay * p))",
    ],
    "containers.py": ["  dynamic after the run: `weights['rgb']` (its value), ", "      at tests/corpus/containers.py:18 in fuse: "],
}


@pytest.mark.parametrize("script", sorted(FIRST_CAUSES))
def test_the_first_cause_is_the_one_the_fix_removes(script: str, tmp_path: Path):
    run, _, out = corpus_run(script)
    lines = out.splitlines()
    for expected in REPORT_LINES[script]:
        assert any(line.startswith(expected) for line in lines), (expected, out)
    assert any(line.startswith("  compile time ") and "of it in" in line for line in lines), out
    (f,) = [f for f in run["functions"] if f["recompiles"]]
    category, subject, fix = FIRST_CAUSES[script]
    first = f["recompile_events"][0]["causes"][0]
    assert (first["category"], recorded_subject(first)) == (category, subject)
    hints = [h for fn in _explain(run["log_path"], tmp_path)["functions"] for h in fn["hints"]]
    assert hints and fix in " ".join([hints[0]["hint"], *(line["code"] for line in hints[0]["lines"])]), hints


@pytest.mark.slow
def test_eval_under_no_grad_names_the_training_flags_too(tmp_path: Path):
    run, _, out = corpus_run("train_eval.py")
    (f,) = run["functions"]
    (event,) = f["recompile_events"]
    assert recorded_subject(event["causes"][0]) == "grad mode"
    assert sorted(c["source"] for c in event["also"]) == [
        "L['self']._modules['body']._modules['1'].training",
        "L['self']._modules['body']._modules['3'].training",
    ]
    assert "also changed since that cache entry" in out


@pytest.mark.parametrize("backend", [pytest.param("eager", marks=pytest.mark.slow), pytest.param("inductor", marks=pytest.mark.inductor)])
def test_a_partial_loss_recompiles_on_its_smoothing_not_on_grad_mode(backend: str, tmp_path: Path):
    """partial_loss.py (#25): torch's first reason is grad mode for every call (train and eval alternate, the newest
    entry is the other mode's) and so is its limit warning's last reason; 6 of the 7 recompiles come from the
    smoothing (held constant, torch recompiles once: tests/e2e/run/test_causes.py measures it on the eager twin)."""
    run, truth, out = corpus_run("partial_loss.py", backend=backend)
    (f,) = run["functions"]
    decisive = [recorded_subject(e["causes"][0]) for e in f["recompile_events"]]
    smoothing = "value of `loss_fn.keywords['label_smoothing']` on argument `loss_fn`"
    assert (decisive.count(smoothing), decisive.count("grad mode"), len(decisive)) == (6, 1, 7), decisive
    (hit,) = f["limit_hits"]
    assert "grad_mode" in hit["last_reason"] and recorded_subject(hit["cause"]) == smoothing
    assert f"  6x value: {smoothing}" in out.splitlines() and f"on {smoothing}:" in out


# The name the table shows for what each script compiled: the user's function or module, not torch's wrapper
# (issue 25: the wrapper is no part of the name; a function's section names it when it serves several callables).
NAMES = {
    "optim_step.py": "sgd_momentum (corpus/optim_step.py)  ",
    "sequential.py": "Sequential (module)  ",
    "hf_gpt2_generate.py": "GPT2LMHeadModel.forward  ",
}


# The cause as the user's code names it: torch's wrapper passes `args` on, args[2] is sgd_momentum's `lr`.
CAUSE_NAMES = {"optim_step.py": "  1x value: value of argument `lr`"}


@pytest.mark.parametrize("script", in_make_test(sorted(NAMES), SAMPLE & set(NAMES)))
def test_the_name_shown_is_the_users(script: str, tmp_path: Path):
    _needs(script)
    _, _, out = corpus_run(script)
    assert any(line.startswith(NAMES[script]) for line in out.splitlines()), out
    assert " via " not in out and "external_utils" not in out, out
    if script in CAUSE_NAMES:
        assert CAUSE_NAMES[script] in out.splitlines(), out


# --- explain's default view on real models (#13 item 8) --------------------------------------------------------
# "About 40 lines": the longest corpus script (a transformers GPT-2 with generate()) prints 42.
EXPLAIN_LINES = 42


def _explain_both(log_path: str, cwd: Path) -> tuple[str, dict, dict]:
    """explain's default table, and the JSON of the default view and of --full."""
    text = run_guarddiag("explain", log_path, cwd=cwd)
    assert text.returncode == 0, text.stderr[-2000:]
    full = run_guarddiag("explain", log_path, "--full", "--format", "json", cwd=cwd)
    assert full.returncode == 0, full.stderr[-2000:]
    return text.stdout, _explain(log_path, cwd), json.loads(full.stdout)


@pytest.mark.parametrize("script", in_make_test(SCRIPTS, SAMPLE))
def test_explain_fits_on_a_screen_and_full_lists_what_it_folds(script: str, tmp_path: Path):
    _needs(script)
    run, _, _ = corpus_run(script)
    text, short, full = _explain_both(run["log_path"], tmp_path)
    assert len(text.strip().splitlines()) <= EXPLAIN_LINES, text
    for f, g in zip(short["functions"], full["functions"], strict=True):
        for entry, whole in zip(f["entries"], g["entries"], strict=True):
            # Nothing is lost: the folded rows hold every object --full lists, one row each there.
            assert {s for o in entry["objects"] for s in o["sources"]} == {s for o in whole["objects"] for s in o["sources"]}
            assert whole["folded"] == 0
            if entry["folded"]:
                assert len(whole["objects"]) > len(entry["objects"])
        if f["entries"] and f["entries"][0]["folded"]:  # the text shows the first entry whole, the others by their differences
            assert f"cache entry {f['entries'][0]['compile_id']} checks ({f['entries'][0]['folded']} objects folded" in text


@pytest.mark.parametrize("script", sorted(FIRST_CAUSES))
def test_explain_never_folds_the_object_a_recompile_is_about(script: str, tmp_path: Path):
    run, _, _ = corpus_run(script)
    (f,) = [f for f in _explain(run["log_path"], tmp_path)["functions"] if f["recompiles"]]
    category, subject, _ = FIRST_CAUSES[script]
    name = subject.split("`")[1]
    rows = [o for o in f["entries"][0]["objects"] if f"`{name}`" in o["name"] and o["count"] == 1]
    assert rows and all(o["matters"] and o["recompiles"] for o in rows), f["entries"][0]["objects"]


@pytest.mark.slow
def test_explain_names_the_no_grad_functions_argument_as_its_parameter(tmp_path: Path):
    """sgd_momentum(params, bufs, lr) under @torch.no_grad() runs in torch's `inner(*args)`: args[2] is `lr`."""
    run, _, _ = corpus_run("optim_step.py")
    text, short, _ = _explain_both(run["log_path"], tmp_path)
    assert "argument `lr`: value 0.05" in text and "`args[2]`" not in text
    assert "sgd_momentum (corpus/optim_step.py): 2 cache entries" in text
    assert "`params[0..3]` (4 objects): id() each" in text
    assert "fix (value: value of argument `lr`): automatic dynamic made `lr` dynamic after it changed (one recompile" in text
    # torch's own optimizer frames that never recompiled fold whole.
    assert "objects: read by `torch`'s own code, which never recompiled here" in text
