"""The report value of a command (guarddiag/report.py, gate.GateResult, compare.CompareReport): built once,
and every renderer, the record, the gate's exit code and compare's formats take what it holds. Each test
builds a value, changes what it holds, and shows that every output follows the value, not the run: a
renderer that computed rank divergence (or gaps) again would show the run's own."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.compare import ComparePlan, Variant, VariantResult, build_report
from guarddiag.config import Settings
from guarddiag.divergence import divergence_dict, rank_divergence
from guarddiag.errors import OK, REGRESSION, SCRIPT_FAILED
from guarddiag.flags import Catalog
from guarddiag.gate import evaluate
from guarddiag.guardcost import cost_dicts
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines
from guarddiag.render import FORMATS, render
from guarddiag.render.compare import render_compare
from guarddiag.render.gate import render_check
from guarddiag.report import RunReport, record_dict, run_report, save_report
from guarddiag.store import load_run, run_to_dict
from tests.conftest import LOGS, in_checkout
from tests.unit.reports import reports

JOBS = LOGS / "torch-2.13.0" / "torchrun"
DIVERGING = "rank 2 recompiled it 1 time (value of `self.scaled` on argument `self`); ranks 0, 1, 3 did not"


def _run(name: str) -> Run:
    """A real 4-rank torchrun job (tests/fixtures/logs/torch-2.13.0/torchrun): ``branch4`` diverges on rank 2."""
    text = in_checkout((JOBS / f"{name}.log").read_text(encoding="utf-8"))
    functions, stats = build_from_lines(text.splitlines())
    return Run(functions=functions, parse=stats, source="parse")


def _without_divergence(report: RunReport) -> RunReport:
    """The report of a diverging job, told that no function diverged: what a renderer shows now comes from the value."""
    assert report.divergence, "the job diverges: the test would prove nothing otherwise"
    return replace(report, divergence=())


def test_the_report_holds_what_its_run_gives():
    run = _run("branch4")
    report = run_report(run)
    assert report.divergence == rank_divergence(run)
    assert [d.job for d in report.divergence] == [""] and report.jobs[""].compared == (0, 1, 2, 3)
    assert report.gaps == () and report.uncounted == () and report.uncounted_stances == () and report.counted


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_the_divergence_the_report_holds(fmt: str):
    report = run_report(_run("branch4"))
    assert DIVERGING in render(report, fmt) or fmt in ("json", "yaml")
    quiet = render(_without_divergence(report), fmt)
    assert DIVERGING not in quiet and "rank 2 recompiled it" not in quiet
    if fmt in ("table", "markdown"):
        assert "rank divergence: none (ranks 0, 1, 2, 3 compiled every function alike)" in quiet


def test_the_record_takes_the_reports_divergence(tmp_path: Path):
    """The JSON report, the record ``--out`` writes and the store's dict are one value's."""
    report = _without_divergence(run_report(_run("branch4")))
    (job,) = record_dict(report)["rank_divergence"]
    assert job["ranks"] == [0, 1, 2, 3] and job["functions"] == []
    assert json.loads(render(report, "json")) == json.loads(json.dumps(record_dict(report)))
    save_report(report, tmp_path / "run.json")
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8")) == json.loads(render(report, "json"))
    assert load_run(tmp_path / "run.json") == report.run


def test_the_store_writes_the_divergence_it_is_given():
    run = _run("branch4")
    given = [{"job": "given"}]
    assert run_to_dict(run, given)["rank_divergence"] is given
    report = run_report(run)
    costs = cost_dicts(report.guard_costs)
    assert costs and record_dict(report) == run_to_dict(run, divergence_dict(report.jobs, report.divergence, report.unnamed), costs)
    assert run_to_dict(run, given, costs)["guard_cost"] is costs


def test_the_gate_and_its_exit_code_take_the_reports_divergence(tmp_path: Path):
    settings = Settings(root=tmp_path, max_recompiles=5, fail_on_rank_divergence=True)
    report = run_report(_run("branch4"))
    gated = evaluate({"train.py": report}, None, settings)
    assert gated.exit_code == REGRESSION and DIVERGING in render_check(gated, "table")
    passed = evaluate({"train.py": _without_divergence(report)}, None, settings)
    assert passed.exit_code == OK
    for fmt in FORMATS:
        assert "rank_divergence" not in render_check(passed, fmt) and "rank divergence" not in render_check(passed, fmt)


def test_gaps_the_report_holds_make_the_reports_warn_and_the_gate_refuse(tmp_path: Path):
    """A log that lost lines in rank 2 (as the report holds it): the run's reports warn, the gate does not compare."""
    report = replace(run_report(_run("alike4")), gaps=(("rank2", 3, 1),))
    assert not report.counted
    warning = "torch compiled 3 times in process rank2 but its log shows 1: log lines were lost"
    assert warning in render(report, "table") and warning in render(report, "markdown")
    result = evaluate({"train.py": report}, None, Settings(root=tmp_path, max_recompiles=5))
    assert result.exit_code == SCRIPT_FAILED
    assert f"train.py: {warning}" in render_check(result, "table")


def test_compares_formats_take_each_configurations_divergence_from_its_report():
    base, flipped = Variant("baseline", "python"), Variant("some_flag=true", "python", (("some_flag", "true"),))
    results = [VariantResult(base, reports(_run("branch4"))), VariantResult(flipped, reports(_run("alike4")))]
    report = build_report(ComparePlan(base, (flipped,)), results, Catalog("2.13.0", {}))
    assert [len(found) for found in report.divergence] == [1, 0]
    assert report.divergence_changes[0] is None and report.divergence_changes[1] is not None
    removed = "rank divergence (ranks that compile a function differently): removes it from forward"
    assert removed in render_compare(report, "table")
    told = replace(report, divergence=((), ()), divergence_changes=(None, None))
    assert removed not in render_compare(told, "table") and removed not in render_compare(told, "markdown")
    assert [r["rank_divergence"] for r in json.loads(render_compare(told, "json"))["runs"]] == [[], []]
