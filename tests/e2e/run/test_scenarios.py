"""Every bundled scenario through the installed command, checked against torch's own metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LOGS, SCENARIOS, in_make_test, run_guarddiag, torch_truth
from tests.scenario_runs import scenario_run

# Scenario -> {function: categories of the causes that recompiled it} on the pinned torch.
EXPECTED_CAUSES: dict[str, dict[str, set[str]]] = {
    "class_attribute": {"normalize_features": {"value"}},
    "closure_variable": {"hinge_loss": {"value"}},
    "dict_keys": {"weighted_total": {"container"}},
    "dict_value": {"mlp_forward": {"value"}},
    "float_hyperparameter": {"sgd_update": {"value"}},
    "fresh_module_instance": {"forward": set()},
    "global_variable": {"augment_and_encode": {"value"}},
    "grad_mode": {"compute_loss": {"global_state"}},
    "graph_break": {"forward": {"global_state"}, "torch_dynamo_resume_in_forward_at_31": {"global_state"}},
    "list_length": {"fuse_pyramid": {"container"}},
    "module_bool_attribute": {"forward": {"value"}},
    "module_int_attribute": {"forward": {"value"}},
    "no_recompile": {"forward": set(), "regression_loss": set()},
    "recompile_limit": {"rollout": {"value"}},
    "tensor_dtype": {"attention_scores": {"tensor"}},
    "tensor_requires_grad": {"extract_features": {"tensor"}},
    "tensor_shape": {"train_step": {"tensor", "dynamic_shape"}},
}


def _torch_counts(script: Path, version: str, workdir: Path) -> dict[tuple[str, int], int]:
    """Compiles per (function, first line) as torch's own metrics count them: recorded beside the scenario's
    log for the pinned torch (tests/fixtures/record_logs.py; the same script on the same torch compiles
    the same), measured now in a second run under any other torch."""
    recorded = LOGS / f"torch-{version.split('+')[0]}" / f"{script.stem}.truth.json"
    if recorded.exists():
        truth = json.loads(recorded.read_text())
        if truth["torch_version"] == version and truth["error"] is None:
            return {(f["co_name"], f["co_firstlineno"]): f["compiles"] for f in truth["functions"]}
    return torch_truth(script, workdir)


def test_every_scenario_has_an_expectation():
    assert {p.stem for p in SCENARIOS.glob("*.py")} == set(EXPECTED_CAUSES)


# make test runs a value, a shape and the limit (tests/e2e/run/test_graph_breaks.py counts a graph break); make
# test-slow runs every scenario.
SAMPLE = {"module_int_attribute", "tensor_shape", "recompile_limit"}


@pytest.mark.torch
@pytest.mark.parametrize("name", in_make_test(sorted(EXPECTED_CAUSES), SAMPLE))
def test_scenario_counts_match_torch(name, workdir):
    script = SCENARIOS / f"{name}.py"
    # The plain run of the scenario, shared with the other tests that run it so (tests/scenario_runs.py).
    proc = scenario_run(name)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    run = json.loads((proc.folder / "run.json").read_text())
    assert run["schema"] == "guarddiag.run/2"
    assert run["exit_code"] == 0
    assert run["parse"]["unrecognized"] == 0, run["parse"]["unrecognized_samples"]

    truth = _torch_counts(script, run["torch_version"], workdir)
    ours = {(f["name"], f["line"]): f["compiles"] for f in run["functions"]}
    assert ours == truth
    # torch's own count in this very run (its compilation metrics, read in the child): the recorded
    # truth is still this script's
    assert run["torch_compiles"] == sum(truth.values())
    for f in run["functions"]:
        assert f["recompiles"] == f["compiles"] - 1
        assert len(f["recompile_events"]) == f["recompiles"]
    assert run["totals"]["recompiles"] == sum(f["recompiles"] for f in run["functions"])

    causes = {f["name"]: {e["causes"][0]["category"] for e in f["recompile_events"]} for f in run["functions"]}
    assert causes == EXPECTED_CAUSES[name]
    limit = {f["name"] for f in run["functions"] if f["limit_hit"]}
    assert limit == ({"rollout"} if name == "recompile_limit" else set())

    # The TORCH_TRACE torch wrote in the same run reads as that run, field by field (issue #27).
    traced = run_guarddiag("parse", "trace", "-f", "json", "--strict", cwd=proc.folder)
    assert traced.returncode == 0, traced.stderr
    trace = json.loads(traced.stdout)
    assert trace["functions"] == run["functions"] and trace["torch_compiles"] == run["torch_compiles"]
