"""compare's run folders and a configuration that printed something else than the baseline, on recorded
logs and flag catalogs (no torch run; tests/e2e/compare/test_compare.py runs a script through the command)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from guarddiag.compare import OutputChange, VariantResult, build_report, first_difference, plan_compare
from guarddiag.flags import catalog_from_dict
from guarddiag.ids import FrameId
from guarddiag.pipeline import parse_logs
from guarddiag.render import FORMATS
from guarddiag.render.compare import COMPARE_SCHEMA, render_compare
from tests.conftest import FIXTURES, LOGS
from tests.documents import assert_document
from tests.unit.reports import reports

SHAPE = LOGS / "torch-2.13.0" / "tensor_shape.log"


def test_first_difference_names_the_line_and_both_texts():
    assert first_difference("a\nb\n", "a\nb\n") is None
    assert first_difference("loss 1.0\nhook ran\n", "loss 1.0\n") == OutputChange(2, "hook ran", None)
    assert first_difference("x\n", "x\ny\n") == OutputChange(2, None, "y")
    assert first_difference("step 1\nloss 0.25\n", "step 1\nloss 0.2500001\n") == OutputChange(2, "loss 0.25", "loss 0.2500001")
    assert first_difference("", "out\n") == OutputChange(1, None, "out")
    # The same lines, another ending: still a difference, on the last line.
    assert first_difference("a\nb", "a\nb\n") == OutputChange(2, "b", "b")


def _report(change: OutputChange | None):
    catalog = catalog_from_dict(json.loads((FIXTURES / "flags" / "torch-2.13.0.json").read_text()))
    plan = plan_compare(catalog, ["automatic_dynamic_shapes"], False, ["py"])
    run = parse_logs([str(SHAPE)])
    base = replace(run, source="run", log_path="runs/base/torch.log")
    flipped = replace(run, source="run", log_path="runs/flip/torch.log")
    repeat = replace(flipped, log_path="runs/flip-2/torch.log")
    results = [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(flipped, repeat), stdout_change=change)]
    return build_report(plan, results, catalog)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_gives_each_configurations_run_folders_and_the_output_change(fmt: str):
    out = assert_document(render_compare(_report(OutputChange(3, "hook calls: 0", "hook calls: 3")), fmt), fmt, COMPARE_SCHEMA)
    if fmt in ("json", "yaml"):
        base, flip = out["runs"]
        assert (base["folders"], flip["folders"]) == (["runs/base"], ["runs/flip", "runs/flip-2"])
        assert base["stdout_change"] is None
        assert flip["stdout_change"] == {"line": 3, "baseline": "hook calls: 0", "variant": "hook calls: 3"}
        return
    assert "baseline: runs/base" in out and "automatic_dynamic_shapes=false: runs/flip, runs/flip-2" in out
    sentence = (
        "automatic_dynamic_shapes=false: stdout differs from the baseline run's (first difference at line 3: "
        "'hook calls: 0' in the baseline, 'hook calls: 3' here): the flip may change what the script does, "
        "not only how it compiles"
    )
    assert out.count(sentence) == 1


def test_the_same_output_says_nothing_and_a_long_line_is_cut():
    assert "stdout differs" not in render_compare(_report(None), "table")
    text = render_compare(_report(OutputChange(1, "x" * 200, None)), "table")
    assert f"(first difference at line 1: '{'x' * 57}...' in the baseline, nothing here)" in text


def test_output_that_varies_between_repeats_is_compared_with_nothing(tmp_path):
    """A script that prints a time or a random number: with --repeat, its baseline's repeats differ, so no flip is
    said to change its output (was: every flip "output differs from the baseline's", and the hint it verified too)."""
    from guarddiag.commands.compare import _with_output_changes

    catalog = catalog_from_dict(json.loads((FIXTURES / "flags" / "torch-2.13.0.json").read_text()))
    plan = plan_compare(catalog, ["automatic_dynamic_shapes"], False, ["py"])
    run = replace(parse_logs([str(SHAPE)]), source="run")

    def repeats(label: str, *outputs: str) -> tuple:
        runs = []
        for i, text in enumerate(outputs):
            folder = tmp_path / f"{label}-{i}"
            folder.mkdir()
            (folder / "stdout.txt").write_text(text)
            runs.append(replace(run, log_path=str(folder / "torch.log")))
        return tuple(runs)

    varying = _with_output_changes([VariantResult(plan.baseline, reports(*repeats("base", "time 1.5\n", "time 2.5\n"))),
                                    VariantResult(plan.variants[0], reports(*repeats("flip", "time 3.5\n", "time 3.5\n")))])
    assert varying[0].stdout_varies == OutputChange(1, "time 1.5", "time 2.5")
    assert (varying[1].stdout_change, varying[1].stdout_compared) == (None, False)
    text = render_compare(build_report(plan, varying, catalog), "table")
    assert "baseline: its repeats printed different things (first difference at line 1: 'time 1.5', then 'time 2.5')" in text
    assert "stdout differs" not in text
    steady = _with_output_changes([VariantResult(plan.baseline, reports(*repeats("b2", "a\n", "a\n"))),
                                   VariantResult(plan.variants[0], reports(*repeats("f2", "b\n", "b\n")))])
    assert steady[1].stdout_change == OutputChange(1, "a", "b") and steady[1].stdout_compared


def test_a_cause_no_flip_answers_is_not_said_to_need_a_code_change():
    # Grad mode (an eval pass under no_grad) is expected, which explain says; compare must not contradict it.
    from guarddiag.compare import CauseResult
    from guarddiag.flips import Target
    from guarddiag.model import FunctionSummary
    from guarddiag.render.flips import cause_lines

    f = FunctionSummary("forward", "model.py", 3, (FrameId("0"),), 2, ())
    target = Target(f, ("global_state", "", "grad mode"), "global_state", "grad mode", 1, 0, frozenset(), ())
    (line,) = cause_lines(CauseResult(target, ()), 6)
    assert "needs a change of the code" not in line and "expected" in line
