"""`guarddiag compare`, `diff` and `flags` through the installed command, against torch's own counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import LOGS, SCENARIOS, in_make_test, run_guarddiag
from tests.flag_catalog import cache_flag_catalog
from tests.truth_runs import compare_once, shared_truth


def _compare(scenario: str, *flag_args: str) -> dict:
    """The compare report of the scenario, made once per session (explain's hint tests run the same command);
    the flag catalog is the session's (reading it is tested below)."""
    return compare_once(str(SCENARIOS / f"{scenario}.py"), *flag_args)[1]


def _function(diff: dict, name: str) -> dict:
    (f,) = [f for f in diff["functions"] if f["name"] == name]
    return f


def _check_against_torch(scenario: str, function: str, fdelta: dict, flag: str) -> None:
    script = SCENARIOS / f"{scenario}.py"
    before = {name: n for (name, _), n in shared_truth(script).items()}
    after = {name: n for (name, _), n in shared_truth(script, (flag,)).items()}
    assert (fdelta["compiles_before"], fdelta["compiles_after"]) == (before[function], after[function])


@pytest.mark.torch
@pytest.mark.slow
def test_allow_unspec_int_on_nn_module_removes_the_layer_idx_recompiles():
    doc = _compare("module_int_attribute", "--flag", "allow_unspec_int_on_nn_module")
    base, flipped = doc["runs"]
    assert flipped["config"] == {"allow_unspec_int_on_nn_module": True}  # the flip really happened in the child
    (diff,) = doc["diffs"]
    forward = _function(diff, "forward")
    assert forward["removed"] >= 4 and forward["added"] == 0
    removed = [c for c in forward["causes"] if c["removed"]]
    assert {c["category"] for c in removed} == {"value"} and {c["source"] for c in removed} == {"self.layer_idx"}
    _check_against_torch("module_int_attribute", "forward", forward, "allow_unspec_int_on_nn_module=true")


@pytest.mark.torch
@pytest.mark.slow
def test_automatic_dynamic_shapes_off_adds_shape_recompiles():
    doc = _compare("tensor_shape", "--flag", "automatic_dynamic_shapes")
    (diff,) = doc["diffs"]
    step = _function(diff, "train_step")
    assert step["added"] > 0
    assert "tensor" in {c["category"] for c in step["causes"] if c["added"]}
    _check_against_torch("tensor_shape", "train_step", step, "automatic_dynamic_shapes=false")


@pytest.mark.torch
@pytest.mark.slow
def test_specialize_float_and_recompile_limit_in_one_compare():
    made, doc = compare_once(str(SCENARIOS / "float_hyperparameter.py"), "--flag", "specialize_float", "--flag", "recompile_limit=16")
    labels = [r["label"] for r in doc["runs"]]
    assert labels == ["baseline", "specialize_float=true", "recompile_limit=16"]
    spec, limit = doc["diffs"]
    update = _function(spec, "sgd_update")
    assert update["added"] > 0 and {c["category"] for c in update["causes"] if c["added"]} == {"value"}
    _check_against_torch("float_hyperparameter", "sgd_update", update, "specialize_float=true")
    assert _function(limit, "sgd_update")["added"] == 0  # a higher limit changes nothing when the limit is not hit
    # Three runs in parallel share the cores instead of each starting a thread per core.
    if "OMP_NUM_THREADS" not in os.environ:
        cores = os.cpu_count() or 1
        share = max(1, cores // min(cores, 3))
        log = Path(doc["runs"][0]["records"][0]).with_name("torch.log")
        assert f'"num_threads":{share}' in (made.folder / log).read_text()


@pytest.mark.torch
@pytest.mark.slow
def test_raising_the_recompile_limit_removes_the_limit_hit():
    doc = _compare("recompile_limit", "--flag", "recompile_limit=16")
    rollout = _function(doc["diffs"][0], "rollout")
    assert rollout["limit_hit_before"] and not rollout["limit_hit_after"]
    assert rollout["compiles_after"] > rollout["compiles_before"]
    _check_against_torch("recompile_limit", "rollout", rollout, "recompile_limit=16")


@pytest.mark.torch
def test_a_no_op_flag_is_said_to_be_one_before_any_run(workdir):
    cache_flag_catalog(workdir)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = run_guarddiag("compare", str(SCENARIOS / "fresh_module_instance.py"), "--flag", "inline_inbuilt_nn_modules", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "inline_inbuilt_nn_modules does nothing in torch 2.13" in proc.stdout
    assert "not run" in proc.stdout
    assert not (workdir / ".guarddiag" / "runs").exists()  # nothing was run (the flag catalog cache may be)


@pytest.mark.torch
def test_unknown_compare_flag_is_refused(workdir):
    proc = run_guarddiag("compare", str(SCENARIOS / "no_recompile.py"), "--flag", "inline_inbuilt_nn_module",
                         cwd=cache_flag_catalog(workdir))
    assert proc.returncode == 2
    assert "did you mean: inline_inbuilt_nn_modules" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.torch
def test_flags_lists_env_vars_and_deprecations(workdir):
    proc = run_guarddiag("flags", "inline", cwd=workdir)
    assert proc.returncode == 0
    assert "inline_inbuilt_nn_modules" in proc.stdout and "deprecated" in proc.stdout
    data = json.loads(run_guarddiag("flags", "automatic_dynamic", "-f", "json", cwd=workdir).stdout)
    (flag,) = [f for f in data["flags"] if f["name"] == "automatic_dynamic_shapes"]
    assert flag["env"] == ["TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES"]
    (mark_as,) = [f for f in data["flags"] if f["name"] == "automatic_dynamic_shapes_mark_as"]
    assert mark_as["choices"] == ["dynamic", "unbacked"] and mark_as["choices_only"]
    assert "one of 'dynamic', 'unbacked'" in run_guarddiag("flags", "mark_as", cwd=workdir).stdout


def test_diff_of_recorded_torch_2_4_logs_shows_inlining_removes_identity_recompiles(workdir):
    a, b = workdir / "a.json", workdir / "b.json"
    assert run_guarddiag("parse", str(LOGS / "torch-2.4.1" / "fresh_module_instance.log"), "-o", str(a)).returncode == 0
    assert run_guarddiag("parse", str(LOGS / "torch-2.4.1" / "fresh_module_instance.inline1.log"), "-o", str(b)).returncode == 0
    proc = run_guarddiag("diff", str(a), str(b), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    forward = _function(json.loads(proc.stdout)["diffs"][0], "forward")
    assert (forward["compiles_before"], forward["compiles_after"]) == (12, 1)
    assert forward["removed"] == 11 and forward["added"] == 0
    assert {c["category"] for c in forward["causes"] if c["removed"]} == {"identity"}
    table = run_guarddiag("diff", str(a), str(b)).stdout
    assert "removes 11 of 11 recompiles of forward" in table


@pytest.mark.torch
@pytest.mark.slow
def test_same_environment_twice_with_repeats_changes_nothing():
    import sys

    doc = _compare("dict_keys", "--python", sys.executable, "--python", sys.executable, "--repeat", "2")
    assert [len(r["status"]) for r in doc["runs"]] == [2, 2]
    assert all(not r["unstable"] for r in doc["runs"])
    (diff,) = doc["diffs"]
    assert all(f["removed"] == 0 and f["added"] == 0 for f in diff["functions"])


TINY = """
import torch

@torch.compile(backend="eager")
def scale(x, n):
    return x * n

for n in range(3):
    scale(torch.ones(2), n)
"""


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory):
    """A one-function script; the folder holds the session's flag catalog cache for the tests that use it."""
    folder = cache_flag_catalog(tmp_path_factory.mktemp("formats"))
    (folder / "tiny.py").write_text(TINY)
    return folder


@pytest.mark.torch
# Each format is a compare of its own: make test runs JSON (the report itself; the README's examples show the
# table, tests/unit/render every format of recorded compares).
@pytest.mark.parametrize("fmt", in_make_test(["table", "json", "yaml", "markdown"], {"json"}))
def test_compare_in_every_format(tiny_project, fmt):
    from tests.documents import assert_document

    out = tiny_project / f"compare-{fmt}.json"
    proc = run_guarddiag("compare", "tiny.py", "--flag", "automatic_dynamic_shapes", "-f", fmt, "-o", str(out), cwd=tiny_project)
    assert proc.returncode == 0, proc.stderr
    doc = assert_document(proc.stdout, fmt, "guarddiag.compare/1")
    saved = json.loads(out.read_text())  # --out writes the JSON of the same report, whatever the format
    assert saved["schema"] == "guarddiag.compare/1"
    assert [r["label"] for r in saved["runs"]] == ["baseline", "automatic_dynamic_shapes=false"]
    (scale,) = saved["diffs"][0]["functions"]
    assert (scale["recompiles_before"], scale["recompiles_after"]) == (1, 2)
    if fmt in ("json", "yaml"):
        assert doc == saved
    elif fmt == "markdown":
        assert "| configuration" in doc and "### baseline -> automatic_dynamic_shapes=false" in doc
    else:
        assert doc.startswith("guarddiag compare (torch ") and "automatic_dynamic_shapes=false adds 1 recompile of scale" in doc


@pytest.mark.torch
@pytest.mark.parametrize("fmt", ["table", "json", "yaml", "markdown"])
def test_flags_in_every_format(tiny_project, fmt):
    from tests.documents import assert_document

    proc = run_guarddiag("flags", "automatic_dynamic_shapes", "-f", fmt, cwd=tiny_project)
    assert proc.returncode == 0, proc.stderr
    doc = assert_document(proc.stdout, fmt, "guarddiag.flag-list/1")
    if fmt in ("json", "yaml"):
        assert "automatic_dynamic_shapes" in [f["name"] for f in doc["flags"]]
    else:
        assert "TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES" in doc
