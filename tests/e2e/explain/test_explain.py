"""`guarddiag explain` against reality: its "would recompile" claims and its fix hints, checked with real torch.

Each claim is read from explain's own output, then the change is made in a real program and the
compiles are counted; each fix hint is applied (a flag through `guarddiag compare`, or a modified
copy of the scenario) and the scenario's recompiles must drop. Other torch versions are used when
their interpreters are named by GUARDDIAG_TORCH_2_4_PYTHON / GUARDDIAG_TORCH_2_1_PYTHON, so the
per-version claims (id() vs type of a module) are checked too; CI has torch 2.13 only, and those
tests skip there, naming the variable.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guarddiag.commands.explain import explain_lines, explain_path
from guarddiag.render.explain_words import FunctionWords, HintWords, explanation_words, hint_data
from tests.apply_hints import apply_lines
from tests.conftest import (
    FIXTURES,
    LOGS,
    ROOT,
    SCENARIOS,
    in_checkout,
    needs_other_torch,
    other_torch_python,
    run_guarddiag,
    torch_truth,
)
from tests.truth_runs import compare_once, shared_truth

PROBE = FIXTURES / "explain" / "probe_claims.py"
DEEP = FIXTURES / "explain" / "deep_sequential.py"
PYTHONS = [
    pytest.param("", id="this-torch"),
    *(pytest.param(v, id=v, marks=needs_other_torch(v)) for v in ("GUARDDIAG_TORCH_2_4_PYTHON", "GUARDDIAG_TORCH_2_1_PYTHON")),
]
ONE_SCREEN = 50

# change in probe_claims.py -> where explain states its effect: (object row, words of a "recompiles"
# sentence, words of a "no recompile" sentence). The first row present decides; an object explain does
# not list is not checked at all ("anything not listed is not checked"), i.e. the claim is "no recompile".
SELECTORS: dict[str, list[tuple[str, str, str]]] = {
    "another_instance": [
        ("argument `m`", "another object as argument `m` recompiles", "another Block instance as argument `m`: no recompile")
    ],
    "layer_idx": [("`m.layer_idx`", "changing `m.layer_idx` recompiles", "")],
    "dict_value": [("`d['a']`", "changing `d['a']` recompiles", "")],
    "dict_new_key": [("argument `d`", "keys of `d` recompiles", "adding keys to `d`: no recompile")],
    "x_values": [("argument `x`", "", "new values in `x`: no recompile")],
    "x_batch": [("argument `x`", "another size of `x` at dim 0", "another size of `x` at dim 0: no recompile")],
    "param_values": [("parameters under `m`", "", "updating their values")],
    "global_flag": [("global `FLAG`", "changing `FLAG` recompiles", "")],
    "unlisted_global": [("global `UNUSED`", "changing `UNUSED` recompiles", "")],
    "closure": [("closure variable `shift`", "changing `shift` recompiles", "")],
    "class_attr": [("`Cfg.scale`", "changing `Cfg.scale` recompiles", ""), ("global `Cfg`", "", "changing an attribute of `Cfg`")],
}


def claim(f: FunctionWords, change: str) -> bool:
    """Whether explain says the change recompiles, from its sentences only."""
    objects = f.entries[0].objects
    for name, recompiles, stays in SELECTORS[change]:
        rows = [o for o in objects if o.name.startswith(name) or name in o.name]
        if not rows:
            continue
        (row,) = rows
        if recompiles and any(recompiles in s for s in row.recompiles):
            return True
        if stays and any(stays in s for s in row.no_recompile):
            return False
        raise AssertionError(f"{change}: explain lists {row.name} but says nothing about this change: {row}")
    return False


def _probe_truth(python: str) -> dict[str, int]:
    changes = [*SELECTORS, "grad_mode"]
    proc = subprocess.run([python, str(PROBE), "--apply", *changes], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.torch
@pytest.mark.parametrize("variable", PYTHONS)
@pytest.mark.slow
def test_every_recompile_claim_holds_when_the_change_is_made(variable: str, tmp_path: Path, monkeypatch):
    python = other_torch_python(variable) if variable else sys.executable
    assert python is not None
    monkeypatch.chdir(tmp_path)
    facts, _ = explain_path(PROBE, full=False, python=python)
    explanation = explanation_words(facts)
    (step,) = [f for f in explanation.functions if f.name == "step"]
    truth = _probe_truth(python)
    claims = {change: claim(step, change) for change in SELECTORS}
    claims["grad_mode"] = "grad mode" in step.entries[0].ambient
    wrong = {c: (claims[c], truth[c]) for c in claims if claims[c] != (truth[c] > 0)}
    assert not wrong, f"{explanation.torch_version}: claim (recompiles?) vs graphs compiled after the change: {wrong}"
    # both outcomes are exercised on every version, so the test can fail either way
    assert set(claims.values()) == {True, False}


@pytest.mark.torch
@pytest.mark.slow
def test_a_300_module_model_fits_on_one_screen(tmp_path: Path):
    proc = run_guarddiag("explain", str(DEEP), cwd=tmp_path) if _has_command() else None
    if proc is not None:
        assert proc.returncode == 0, proc.stderr[-2000:]
        text = proc.stdout
    else:
        from guarddiag.commands.explain import explain_target

        text = explain_target(str(DEEP), "table", False)
    lines = text.strip().splitlines()
    assert len(lines) <= ONE_SCREEN, text
    assert "300 submodules under `m` (Linear x300): type each" in text
    assert "600 parameters under `m`: tensor metadata each, all static shapes" in text


def _has_command() -> bool:
    """The `explain` subcommand is wired into the CLI (cli.py is edited separately)."""
    proc = run_guarddiag("explain", "--help")
    return proc.returncode == 0


def _hints(log: Path, function: str) -> tuple[HintWords, ...]:
    with log.open(encoding="utf-8") as fh:
        # The scenario's source at hand, as a user's run has it (a hint reads the compiled function).
        explanation = explanation_words(explain_lines(map(in_checkout, fh)))
    (f,) = [f for f in explanation.functions if f.name == function]
    assert f.hints, f"explain shows no fix hint for {function} in {log}"
    return f.hints


def _compiles(script: Path, cwd: Path, function: str) -> int:
    """torch's compiles of the function; a scenario's own are counted once per session (the compare tests
    read them too), a changed copy's each time."""
    counts = shared_truth(script) if script.parent == SCENARIOS else torch_truth(script, cwd)
    return sum(n for (name, _), n in counts.items() if name == function)


def _compare_recompiles(check: str, script: Path, python: str | None = None) -> tuple[int, int]:
    """Run the hint's own `guarddiag compare` command (once per session: test_compare runs the same);
    recompiles before and after the flip."""
    command, *args = check.split()[1:]  # drop the leading "guarddiag"
    assert command == "compare", check
    args[args.index("SCRIPT")] = str(script)
    if python:
        args += ["--python", python]
    (diff,) = compare_once(*args)[1]["diffs"]
    return diff["recompiles_before"], diff["recompiles_after"]


@pytest.mark.torch
def test_hint_allow_unspec_int_on_nn_module_removes_layer_idx_recompiles():
    (hint,) = _hints(LOGS / "torch-2.13.0" / "module_int_attribute.log", "forward")
    assert "allow_unspec_int_on_nn_module" in hint.check
    before, after = _compare_recompiles(hint.check, SCENARIOS / "module_int_attribute.py")
    assert before == 5 and after < before


@pytest.mark.torch
@needs_other_torch("GUARDDIAG_TORCH_2_4_PYTHON")
def test_hint_inline_inbuilt_nn_modules_removes_fresh_instance_recompiles_on_2_4():
    (hint,) = _hints(LOGS / "torch-2.4.1" / "fresh_module_instance.log", "forward")
    python = other_torch_python("GUARDDIAG_TORCH_2_4_PYTHON")
    before, after = _compare_recompiles(hint.check, SCENARIOS / "fresh_module_instance.py", python)
    assert (before, after) == (11, 0)


def _patched(scenario: str, old: str, new: str, tmp_path: Path) -> Path:
    source = (SCENARIOS / f"{scenario}.py").read_text(encoding="utf-8")
    assert old in source
    path = tmp_path / f"{scenario}_fixed.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    return path


def _applied(scenario: str, hint: HintWords, tmp_path: Path, choice: str = "") -> Path:
    """A copy of the scenario with the lines the hint says to write (or those of one of its choices), placed
    as they say (tests/apply_hints.py)."""
    data = hint_data(hint)  # the lines as `guarddiag explain --format json` gives them
    lines = data["lines"] if not choice else next(c["lines"] for c in data["choices"] if c["id"] == choice)
    assert lines, hint
    source = (SCENARIOS / f"{scenario}.py").read_text(encoding="utf-8")
    path = tmp_path / f"{scenario}_fixed.py"
    path.write_text(apply_lines(source, lines), encoding="utf-8")
    return path


@pytest.mark.torch
@pytest.mark.slow
def test_hint_tensor_instead_of_float_removes_the_lr_recompile(tmp_path: Path):
    (hint,) = _hints(LOGS / "torch-2.13.0" / "float_hyperparameter.log", "sgd_update")
    assert hint.fact.hint == "float_as_tensor" and [line.code for line in hint.fact.lines] == ["torch.tensor(lr)"]
    fixed = _applied("float_hyperparameter", hint, tmp_path)
    assert _compiles(SCENARIOS / "float_hyperparameter.py", tmp_path, "sgd_update") == 2
    assert _compiles(fixed, tmp_path, "sgd_update") == 1


@pytest.mark.torch
@pytest.mark.slow
def test_hint_maybe_mark_dynamic_removes_the_batch_size_recompile(tmp_path: Path):
    (hint, _) = _hints(LOGS / "torch-2.13.0" / "tensor_shape.log", "train_step")
    # torch named the index (size mismatch at index 0), and y's size changed with x's: the hint marks both.
    assert hint.fact.hint == "maybe_mark_dynamic"
    assert [line.code for line in hint.fact.lines] == ["torch._dynamo.maybe_mark_dynamic(x, 0)", "torch._dynamo.maybe_mark_dynamic(y, 0)"]
    fixed = _applied("tensor_shape", hint, tmp_path)
    # 3 -> 2: the batch-20 recompile is gone; batch 1 keeps its own entry (torch specializes sizes 0 and 1)
    assert _compiles(SCENARIOS / "tensor_shape.py", tmp_path, "train_step") == 3
    assert _compiles(fixed, tmp_path, "train_step") == 2


@pytest.mark.torch
@pytest.mark.slow
def test_hint_size_one_removes_the_size_one_recompile_too(tmp_path: Path):
    """The batch-1 entry the dynamic entry leaves (torch specializes size 1): size-oblivious backed sizes, with the
    batch dim marked as the other hint says, leave one compile for every batch size."""
    (marked, size_one) = _hints(LOGS / "torch-2.13.0" / "tensor_shape.log", "train_step")
    assert size_one.fact.hint == "size_one" and "backed_size_oblivious" in size_one.check
    assert [line.setting for line in size_one.fact.lines] == ["torch.fx.experimental._config.backed_size_oblivious"]
    once = _applied("tensor_shape", marked, tmp_path)
    both = apply_lines(once.read_text(encoding="utf-8"), hint_data(size_one)["lines"])
    once.write_text(both, encoding="utf-8")
    assert _compiles(once, tmp_path, "train_step") == 1


@pytest.mark.torch
@pytest.mark.slow
def test_hint_same_keys_every_call_removes_the_dict_recompiles(tmp_path: Path):
    (hint,) = _hints(LOGS / "torch-2.13.0" / "dict_keys.log", "weighted_total")
    assert "same keys" in hint.hint
    fixed = _patched(
        "dict_keys",
        "        total = weighted_total(losses)",
        "        for key in LOSS_WEIGHTS:\n            losses.setdefault(key, (w * 0).sum())\n        total = weighted_total(losses)",
        tmp_path,
    )
    # a plain torch.zeros(()) would still recompile once: requires_grad differs, as the tensor rows of explain say
    assert _compiles(fixed, tmp_path, "weighted_total") == 1


@pytest.mark.torch
@pytest.mark.slow
def test_hint_same_length_every_call_removes_the_list_recompiles(tmp_path: Path):
    (hint,) = _hints(LOGS / "torch-2.13.0" / "list_length.log", "fuse_pyramid")
    assert hint.kind == "fix" and "same keys/length" in hint.hint
    fixed = _patched("list_length", "    for levels in [2, 2, 3, 4, 3, 2]:", "    for levels in [4, 4, 4, 4, 4, 4]:", tmp_path)
    assert _compiles(fixed, tmp_path, "fuse_pyramid") == 1


def test_inherent_recompiles_are_notes_not_fixes():
    """A loop count, a code-path string and grad mode recompile by nature: explain must not promise a fix."""
    for log, function in [("recompile_limit", "rollout"), ("global_variable", "augment_and_encode"), ("grad_mode", "compute_loss")]:
        hints = _hints(LOGS / "torch-2.13.0" / f"{log}.log", function)
        assert {h.kind for h in hints} == {"note"}, (log, hints)
