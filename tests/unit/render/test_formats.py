"""Every report in every format, on recorded logs and records (no torch run): each output is one
parseable document. The commands that need torch are covered through the installed command in
tests/e2e (test_cli.py: run; test_compare.py: compare, flags)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from guarddiag.cli import app
from guarddiag.commands.flags import select_flags
from guarddiag.compare import VariantResult, build_report, plan_compare, unstable_functions
from guarddiag.flags import catalog_from_dict
from guarddiag.pipeline import parse_logs
from guarddiag.render import FORMATS
from guarddiag.render.compare import COMPARE_SCHEMA, render_compare
from guarddiag.render.diff import DIFF_SCHEMA
from guarddiag.render.flags import FLAG_LIST_SCHEMA, render_flags
from guarddiag.render.gate import CHECK_SCHEMA
from tests.conftest import FIXTURES, LOGS
from tests.documents import assert_document
from tests.unit.reports import reports

SHAPE = LOGS / "torch-2.13.0" / "tensor_shape.log"
FRESH = LOGS / "torch-2.4.1" / "fresh_module_instance.log"
INLINED = LOGS / "torch-2.4.1" / "fresh_module_instance.inline1.log"


def _cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.output, result.exception)
    return result.stdout


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Run records of a log where a module is recreated each step (12 compiles) and of its fix (1)."""
    folder = tmp_path_factory.mktemp("records")
    a, b = folder / "a.json", folder / "b.json"
    _cli("parse", str(FRESH), "-o", str(a))
    _cli("parse", str(INLINED), "-o", str(b))
    return a, b


@pytest.mark.parametrize("fmt", FORMATS)
def test_parse_in_every_format(fmt: str):
    out = assert_document(_cli("parse", str(SHAPE), "-f", fmt), fmt, None if fmt in ("table", "markdown") else "guarddiag.run/2")
    if fmt in ("json", "yaml"):
        assert out["totals"]["recompiles"] == 2
    else:
        assert "train_step (scenarios/tensor_shape.py:" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_diff_in_every_format(fmt: str, records: tuple[Path, Path]):
    a, b = records
    out = assert_document(_cli("diff", str(a), str(b), "-f", fmt), fmt, DIFF_SCHEMA)
    if fmt in ("json", "yaml"):
        (forward,) = out["diffs"][0]["functions"]
        assert (forward["removed"], forward["label"]) == (11, "forward (scenarios/fresh_module_instance.py:32)")
        assert out["diffs"][0]["verdict"] == ["b.json removes 11 of 11 recompiles of forward (scenarios/fresh_module_instance.py:32) "
                                              "(identity on self); adds none"]
    else:
        assert "b.json removes 11 of 11 recompiles of forward" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_in_every_format(fmt: str, records: tuple[Path, Path]):
    a, b = records
    out = assert_document(_cli("check", str(a), str(b), "--max-recompiles", "3", "-f", fmt, code=5), fmt, CHECK_SCHEMA)
    if fmt in ("json", "yaml"):
        assert out["exit_code"] == 5 and out["verdict"] == "FAILED: 1 recompile regression(s)"
        assert [(Path(r["script"]).name, r["function"], r["recompiles"], r["allowed"], r["status"]) for r in out["rows"]] == [
            ("a.json", "forward", 11, 3, "REGRESSION"),
            ("b.json", "forward", 0, 3, "ok"),
        ]
        (finding,) = out["findings"]
        assert (finding["kind"], finding["failing"], finding["recompiles"], finding["allowed"], finding["baseline"]) == (
            "regression", True, 11, 3, None
        )
        assert finding["message"].endswith("11 recompiles, 8 over the 3 allowed (not in the baseline)")
        assert finding["details"] == ["11x identity: local `self`: a different object"]
    else:
        assert "8 over the 3 allowed" in out and "FAILED: 1 recompile regression(s)" in out


def test_check_table_is_the_report_it_always_was(records: tuple[Path, Path]):
    a, _ = records
    assert _cli("check", str(a), "--max-recompiles", "3", code=5) == _cli("check", str(a), "--max-recompiles", "3", "-f", "table", code=5)


@pytest.mark.parametrize("fmt", FORMATS)
def test_explain_in_every_format(fmt: str):
    out = assert_document(_cli("explain", str(SHAPE), "-f", fmt), fmt, "guarddiag.explain/1")
    assert "train_step" in (json.dumps(out) if isinstance(out, dict) else out)


def _compare_report():
    """baseline (two repeats that disagree) against one flip, plus a flag that does nothing."""
    catalog = catalog_from_dict(json.loads((FIXTURES / "flags" / "torch-2.13.0.json").read_text()))
    plan = plan_compare(catalog, ["automatic_dynamic_shapes", "inline_inbuilt_nn_modules"], False, ["py"])
    fresh, inlined = parse_logs([str(FRESH)]), parse_logs([str(INLINED)])
    failed = replace(inlined, status="failed", exit_code=1, source="run")
    baseline = VariantResult(plan.baseline, reports(fresh, inlined), unstable_functions((fresh, inlined)))
    flipped = VariantResult(plan.variants[0], reports(inlined, failed))
    return build_report(plan, [baseline, flipped], catalog)


@pytest.mark.parametrize("fmt", FORMATS)
def test_compare_in_every_format(fmt: str):
    report = _compare_report()
    out = assert_document(render_compare(report, fmt), fmt, COMPARE_SCHEMA)
    if fmt in ("json", "yaml"):
        assert [r["label"] for r in out["runs"]] == ["baseline", "automatic_dynamic_shapes=false"]
        assert out["runs"][0]["unstable"] == ["forward (scenarios/fresh_module_instance.py:32) compiled [1, 12] times across repeats"]
        assert out["no_ops"][0].startswith("inline_inbuilt_nn_modules does nothing in torch 2.13.0")
        assert out["diffs"][0]["functions"][0]["removed"] == 11
        return
    assert "inline_inbuilt_nn_modules does nothing in torch 2.13.0" in out
    assert "automatic_dynamic_shapes=false: the script failed (exit status 1); its counts cover what ran before that" in out
    assert "automatic_dynamic_shapes=false removes 11 of 11 recompiles of forward" in out
    if fmt == "markdown":
        # The configurations are a table of this document, and each diff a section of it.
        assert "| configuration" in out and "### baseline -> automatic_dynamic_shapes=false" in out
        assert out.count("## guarddiag compare") == 1


def test_compare_json_and_yaml_are_one_document():
    report = _compare_report()
    import yaml

    assert json.loads(render_compare(report, "json")) == yaml.safe_load(render_compare(report, "yaml"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_flags_in_every_format(fmt: str):
    catalog = catalog_from_dict(json.loads((FIXTURES / "flags" / "torch-2.13.0.json").read_text()))
    out = assert_document(render_flags(select_flags(catalog, "mark_as", False), fmt), fmt, FLAG_LIST_SCHEMA)
    if fmt in ("json", "yaml"):
        (flag,) = out["flags"]
        assert (flag["name"], flag["choices"], flag["choices_only"]) == ("automatic_dynamic_shapes_mark_as", ["dynamic", "unbacked"], True)
    else:
        assert "automatic_dynamic_shapes_mark_as" in out and "one of 'dynamic', 'unbacked'" in out
