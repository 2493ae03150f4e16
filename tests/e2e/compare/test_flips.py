"""`guarddiag compare` without --flag through the installed command: it finds the flips each cause of the
baseline calls for, measures them against torch's own counts, and `run` and `explain` of the same script
then say which fix hint was verified; `--flag` reaches torch.compiler.config and torch.fx.experimental._config."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, SCENARIOS, run_guarddiag, torch_truth
from tests.flag_catalog import cache_flag_catalog
from tests.truth_runs import shared_truth

pytestmark = pytest.mark.torch


def _compare(workdir, script, *args: str) -> dict:
    """The compare report of the script; the flag catalog is the session's (reading it is tested in test_compare)."""
    out = workdir / "compare.json"
    proc = run_guarddiag("compare", str(script), *args, "--out", str(out), cwd=cache_flag_catalog(workdir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return json.loads(out.read_text())


def _outcomes(cause: dict) -> dict[str, dict]:
    return {f"{o['flag']}={o['value']}": o for o in cause["outcomes"]}


@pytest.fixture(scope="module")
def compared_module_int(tmp_path_factory):
    """scenarios/module_int_attribute.py (a copy) compared without a flag; its folder keeps the verdicts."""
    workdir = cache_flag_catalog(tmp_path_factory.mktemp("module_int"))
    script = workdir / "model.py"
    shutil.copy(SCENARIOS / "module_int_attribute.py", script)
    out = workdir / "compare.json"
    proc = run_guarddiag("compare", "model.py", "--out", str(out), cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return workdir, json.loads(out.read_text()), proc.stdout


@pytest.mark.slow
def test_compare_without_a_flag_measures_each_flip_the_cause_calls_for(compared_module_int):
    workdir, doc, stdout = compared_module_int
    (cause,) = doc["causes"]
    assert cause["recompiles"] == 5 and "nn_module" in cause["facts"]
    flips = _outcomes(cause)
    assert set(flips) == {"allow_unspec_int_on_nn_module=true", "compiler.dynamic_sources=L['self'].layer_idx"}
    assert [r["label"] for r in doc["runs"]] == ["baseline", *flips]  # every configuration run is kept, with its counts
    for label, o in flips.items():
        assert o["works"] and o["status"] == "ok" and o["stdout_changed"] is False, label
        # The counts are torch's own, with that flip set (model.py is a copy of the scenario).
        counts = {name: n for (name, _), n in shared_truth(SCENARIOS / "module_int_attribute.py", (label,)).items()}
        assert o["compiles_after"] == counts["forward"], label
    assert flips["compiler.dynamic_sources=L['self'].layer_idx"]["removed"] == 5
    assert "removes 5 of 5 recompiles" in stdout and "apply: torch.compiler.config.dynamic_sources" in stdout


@pytest.mark.slow
def test_run_and_explain_of_the_compared_script_say_the_hint_was_verified(compared_module_int):
    workdir, _, _ = compared_module_int
    run = run_guarddiag("run", "model.py", cwd=workdir)
    assert run.returncode == 0, run.stderr
    assert "fix: `self.layer_idx` is an int attribute of an nn.Module" in run.stdout
    assert ": torch._dynamo.config.allow_unspec_int_on_nn_module = True" in run.stdout  # the line to write
    assert "verified by compare (allow_unspec_int_on_nn_module=true): removes 4 of 5 recompiles" in run.stdout
    assert "compare measured compiler.dynamic_sources=L['self'].layer_idx: removes 5 of 5 recompiles" in run.stdout
    doc = json.loads(run_guarddiag("run", "model.py", "-f", "json", cwd=workdir).stdout.split("\n", 3)[3])
    (cause,) = doc["advice"]["functions"][0]["causes"]
    assert cause["verification"]["status"] == "verified" and cause["hint"]["hint"] == "allow_unspec_int_on_nn_module"
    explain = run_guarddiag("explain", "model.py", cwd=workdir)
    assert explain.returncode == 0, explain.stderr
    assert "verified by compare (allow_unspec_int_on_nn_module=true): removes 4 of 5 recompiles" in explain.stdout
    # With other arguments nothing was measured: not verified, and the exact command that verifies it.
    other = run_guarddiag("run", "model.py", "--", "--other", cwd=workdir)
    assert "not verified: guarddiag compare model.py --flag allow_unspec_int_on_nn_module=true -- --other measures it" in other.stdout


def test_a_script_that_does_not_recompile_has_nothing_to_compare(workdir):
    proc = run_guarddiag("compare", str(SCENARIOS / "no_recompile.py"), cwd=cache_flag_catalog(workdir))
    assert proc.returncode == 0, proc.stderr
    nothing = "the baseline recompiled nothing, hit no recompile limit and had no call a stance refused: no cause to remove, no flip run"
    assert nothing in proc.stdout


@pytest.mark.slow
def test_a_raised_limit_keeps_the_code_compiled_and_is_no_fix(workdir):
    doc = _compare(workdir, SCENARIOS / "recompile_limit.py", "--max-flips", "3")
    limited = next(c for c in doc["causes"] if c["limit_hits"])
    raised = _outcomes(limited)["recompile_limit=64"]
    assert raised["effect"] == "keeps_compiled" and raised["keeps_compiled"] and raised["limit_hits_after"] == 0
    assert raised["compiles_after"] > raised["compiles_before"]
    diff = next(d for d in doc["diffs"] if d["after_label"] == "recompile_limit=64")
    assert {f["status"] for f in diff["functions"] if f["name"] == "rollout"} == {"kept_compiled"}


@pytest.mark.slow
def test_flag_reaches_the_compiler_and_fx_config_modules(workdir):
    """Dynamic sources named in torch.compiler.config remove both of tensor_shape's recompiles without a code change."""
    record = workdir / "run.json"
    flag = "compiler.unbacked_sources=L['x']:0,L['y']"
    proc = run_guarddiag("run", str(SCENARIOS / "tensor_shape.py"), "--flag", flag, "--out", str(record), cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(record.read_text())
    assert run["config"] == {"compiler.unbacked_sources": "L['x']:0,L['y']"} and run["functions"][0]["compiles"] == 1
    assert shared_truth(SCENARIOS / "tensor_shape.py", (flag,)) == {(f["name"], f["line"]): f["compiles"] for f in run["functions"]}
    doc = _compare(workdir, SCENARIOS / "tensor_shape.py", "--flag", "fx.backed_size_oblivious")
    assert doc["runs"][1]["config"] == {"fx.backed_size_oblivious": True}
    typo = run_guarddiag("run", str(SCENARIOS / "no_recompile.py"), "--flag", "backed_size_oblivious=true", cwd=workdir)
    assert typo.returncode == 2 and "did you mean: fx.backed_size_oblivious" in typo.stderr and "Traceback" not in typo.stderr


def test_flags_lists_the_compiler_and_fx_modules(workdir):
    # The session's catalog: reading it from torch is test_compare's test_flags_lists_env_vars_and_deprecations.
    proc = run_guarddiag("flags", "oblivious", cwd=cache_flag_catalog(workdir))
    assert proc.returncode == 0, proc.stderr
    assert "fx.backed_size_oblivious" in proc.stdout


@pytest.mark.inductor
@pytest.mark.parametrize(
    ("script", "offered"),
    [("tests/corpus/dataclass_config.py", False), ("scenarios/module_int_attribute.py", True)],
)
def test_on_inductor_allow_unspec_int_on_nn_module_is_offered_only_for_nn_module_ints(tmp_path, script, offered):
    """The slow check (default inductor backend; `make test-inductor`): a dataclass's int is not offered the
    nn.Module flag, an nn.Module's int is, and what compare measured is torch's own count."""
    source = (ROOT / script).read_text().replace("import _truth\n", "").replace("_truth.write()\n", "")
    (tmp_path / "model.py").write_text(source.replace('torch.compile(backend="eager")', "torch.compile"))
    out = tmp_path / "compare.json"
    proc = run_guarddiag("compare", "model.py", "--jobs", "2", "--out", str(out), cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    planned = {(p["flag"], p["value"]) for p in doc["flips"]["planned"]}
    assert (("allow_unspec_int_on_nn_module", "true") in planned) is offered
    for cause in doc["causes"]:
        for label, o in _outcomes(cause).items():
            counts = {name: n for (name, _), n in torch_truth(tmp_path / "model.py", tmp_path, (label,)).items()}
            assert o["compiles_after"] == next(iter(counts.values())), label
