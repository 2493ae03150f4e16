"""The gate's guard budgets (issue 28): a function's guard count (exact) and guard latency (with a margin, torch
measures it once, cold) against the baseline and [tool.guarddiag] budgets, on a recorded run of
tests/fixtures/torchmetrics/guard_blocks.py (3 cache entries of 279 guards; torch's checks 79.18, 66.30, 64.03 us)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag import baseline as baseline_io
from guarddiag.config import Settings, load_settings
from guarddiag.errors import OK, REGRESSION, InputError
from guarddiag.gate import GateResult, evaluate
from guarddiag.ledger import read_ledger
from guarddiag.model import Run
from guarddiag.pipeline import LogReader, build_from_lines
from guarddiag.render.gate import finding_message, render_annotations, render_check, render_junit, render_markdown
from guarddiag.report import run_reports
from tests.conftest import FIXTURES, LOGS

BLOCKS = FIXTURES / "torchmetrics" / "guard_blocks-2.13"
CHEAPEST = 64.03  # the least of the log's three "Guard eval latency" figures


def _run() -> Run:
    with (BLOCKS / "torch.log").open() as fh:
        functions, stats = LogReader(ledger=read_ledger(BLOCKS / "torch.compiles.jsonl")).read(fh).result()
    return Run(functions=functions, parse=stats, source="run", torch_version="2.13.0+cpu")


def _baseline(root: Path, **figures: object) -> baseline_io.Baseline:
    """The run's own baseline, its one function's recorded figures replaced by ``figures``."""
    base = baseline_io.from_runs({"g.py": _run()}, root)
    (script,) = base.scripts
    (f,) = script.functions
    return replace(base, scripts=(replace(script, functions=(replace(f, **figures),)),))


def _check(root: Path, base: baseline_io.Baseline | None, run: Run | None = None, **settings: object) -> GateResult:
    return evaluate(run_reports({"g.py": run or _run()}), base, Settings(root=root, **settings))  # type: ignore[arg-type]


def test_the_baseline_records_the_count_and_the_cheapest_entrys_latency_and_reads_them_back(tmp_path: Path):
    base = baseline_io.from_runs({"g.py": _run()}, tmp_path)
    (f,) = base.scripts[0].functions
    assert (f.guards, f.guard_latency_us) == (279, 64.0)  # to a tenth of a microsecond, in the baseline
    baseline_io.save(base, tmp_path / "b.yaml")
    text = (tmp_path / "b.yaml").read_text()
    assert "guards: 279" in text and "guard_latency_us: 64.0" in text
    assert baseline_io.load(tmp_path / "b.yaml").scripts[0].functions[0] == f


def test_the_same_run_passes_and_says_latency_is_gated_with_a_margin(tmp_path: Path):
    result = _check(tmp_path, baseline_io.from_runs({"g.py": _run()}, tmp_path))
    assert result.exit_code == OK and not result.findings
    (row,) = result.rows
    assert (row.guards.guards, row.guards_allowed, row.latency_allowed) == (279, 279, 256.0)
    text = render_check(result, "table")
    assert "guard latency" not in text.splitlines()[0]  # the figures have columns only when the gate has something to say
    assert "is measured once, with a cold CPU cache" in text and "x4 or +150 us over the baseline" in text
    row = json.loads(render_check(result, "json"))["rows"][0]
    assert (row["guards"], row["guards_allowed"], row["guard_latency_us"], row["guard_latency_us_allowed"]) == (279, 279, CHEAPEST, 256.0)


def test_one_guard_more_than_the_baseline_fails(tmp_path: Path):
    result = _check(tmp_path, _baseline(tmp_path, guards=278))
    assert result.exit_code == REGRESSION
    (f,) = result.failures
    assert (f.kind, f.guard.now, f.guard.baseline) == ("guard_count_grew", 279, 278)
    assert "279 guards in its largest cache entry, 1 more than the baseline's 278" in finding_message(f)
    assert result.rows[0].status == "REGRESSION"
    text = render_check(result, "table")
    assert "278 -> 279 (max 278)" in text and "64 us -> 64 us (max 256 us)" in text
    assert "FAILED: 1 guard regression(s)" in text


def test_fewer_guards_pass_and_say_how_to_record_them(tmp_path: Path):
    result = _check(tmp_path, _baseline(tmp_path, guards=300))
    assert result.exit_code == OK
    (f,) = result.improvements
    assert f.kind == "guard_count_fell" and "down from 300" in finding_message(f)


@pytest.mark.parametrize(
    ("baseline_us", "floor_us", "allowed"),
    [
        (CHEAPEST / 3.9, 0.0, CHEAPEST / 3.9 * 4),  # x3.9: within the x4 margin (torch's noise, a loaded machine)
        (CHEAPEST / 4.5, 0.0, CHEAPEST / 4.5 * 4),  # x4.5: past it
        (10.0, 150.0, 160.0),  # x6.4, but 54 us more: within the default 150 us floor
        (10.0, 50.0, 60.0),  # x6.4 and 54 us more: past a 50 us floor too
    ],
)
def test_latency_inside_the_margin_passes_and_outside_fails(tmp_path: Path, baseline_us: float, floor_us: float, allowed: float):
    result = _check(tmp_path, _baseline(tmp_path, guard_latency_us=baseline_us), guard_latency_floor_us=floor_us)
    assert result.rows[0].latency_allowed == pytest.approx(allowed)
    fails = allowed < CHEAPEST
    assert result.exit_code == (REGRESSION if fails else OK)
    if fails:
        (f,) = result.failures
        assert f.kind == "guard_latency_grew" and f.guard.allowed == pytest.approx(allowed)
        message = finding_message(f)
        assert f"64 us (torch's compile-time figure), past the {allowed:.0f} us allowed" in message
        assert "torch measures it once, cold" in message


def test_the_margin_is_a_setting(tmp_path: Path):
    base = _baseline(tmp_path, guard_latency_us=CHEAPEST / 1.9)
    assert _check(tmp_path, base, guard_latency_factor=1.5, guard_latency_floor_us=10.0).exit_code == REGRESSION


def test_budgets_fail_above_them_whatever_the_baseline(tmp_path: Path):
    result = _check(tmp_path, None, max_guards=250, max_guard_latency_us=50.0)
    assert result.exit_code == REGRESSION
    found = {(f.kind, f.guard.measure, f.guard.now, f.guard.budget) for f in result.failures}
    assert found == {("over_guard_budget", "guards", 279, 250), ("over_guard_budget", "latency", CHEAPEST, 50.0)}
    messages = " | ".join(finding_message(f) for f in result.failures)
    assert "279 guards in its largest cache entry, 29 over the budget of 250 (not known in the baseline)" in messages
    assert "cheapest cache entry 64 us (torch's compile-time figure), over the budget of 50 us" in messages
    assert _check(tmp_path, None, max_guards=279, max_guard_latency_us=65.0).exit_code == OK


def test_a_scripts_budgets_and_a_functions_budget_in_the_baseline(tmp_path: Path):
    reports = run_reports({"g.py": _run()})
    per_script = evaluate(reports, None, Settings(root=tmp_path), guard_budgets={"g.py": (200, None)})
    assert [(f.kind, f.guard.budget) for f in per_script.failures] == [("over_guard_budget", 200)]
    hand_written = _baseline(tmp_path, max_guards=270)
    assert [f.kind for f in evaluate(reports, hand_written, Settings(root=tmp_path)).failures] == ["over_guard_budget"]
    # Recording the baseline again keeps the hand-written budget.
    again = baseline_io.from_runs({"g.py": _run()}, tmp_path, hand_written)
    assert again.scripts[0].functions[0].max_guards == 270


def test_a_baseline_written_before_guard_figures_loads_and_says_they_are_not_known(tmp_path: Path):
    # As guarddiag wrote it before it recorded guards (main at 455311e).
    (tmp_path / "old.yaml").write_text(
        "# guarddiag baseline: recompiles per function. Refresh with `guarddiag check --update`.\n"
        "schema: guarddiag.baseline/1\ntorch_version: 2.13.0+cpu\nscripts:\n- path: g.py\n  functions:\n  - name: forward\n"
        f"    file: {_run().functions[0].file}\n    line: 29\n    compiles: 3\n    recompiles: 2\n    limit_hits: 0\n"
        "    causes:\n      value: 2\n"
    )
    loaded = baseline_io.load(tmp_path / "old.yaml")
    assert (loaded.scripts[0].functions[0].guards, loaded.scripts[0].functions[0].guard_latency_us) == (None, None)
    result = _check(tmp_path, loaded)
    assert result.exit_code == OK
    (f,) = result.findings
    assert f.kind == "guards_unknown" and not f.failing
    assert "the baseline has no guard figures" in finding_message(f) and "check --update" in finding_message(f)
    assert "not known -> 279" in render_check(result, "table")


def test_a_run_without_guard_figures_says_not_known_rather_than_0_or_failing(tmp_path: Path):
    # torch 2.4.1's log: listings without torch's latency, and no compile metrics.
    functions, stats = build_from_lines((LOGS / "torch-2.4.1/fresh_module_instance.log").read_text().splitlines(), roles=lambda *_: {})
    old = Run(functions=functions, parse=stats)
    base = baseline_io.from_runs({"g.py": old}, tmp_path)
    assert base.scripts[0].functions[0].guard_latency_us is None
    base = _baseline_latency(base, 30.0)
    result = _check(tmp_path, base, old, max_guard_latency_us=1.0)
    assert result.exit_code == OK
    (f,) = result.findings
    assert (f.kind, f.categories, f.failing) == ("guards_unknown", ("latency",), False)
    assert "guard latency not known in this run" in finding_message(f)
    assert "30 us -> not known" in render_check(result, "table")


def _baseline_latency(base: baseline_io.Baseline, us: float) -> baseline_io.Baseline:
    (script,) = base.scripts
    return replace(base, scripts=(replace(script, functions=tuple(replace(f, guard_latency_us=us) for f in script.functions)),))


def test_every_format_shows_the_guard_finding(tmp_path: Path):
    result = _check(tmp_path, _baseline(tmp_path, guards=270, guard_latency_us=10.0), guard_latency_floor_us=20.0)
    data = json.loads(render_check(result, "json"))
    assert data["exit_code"] == REGRESSION
    assert data["guard_latency_margin"] == {"factor": 4.0, "floor_us": 20.0}
    (row,) = data["rows"]
    assert (row["guards_baseline"], row["guards"], row["guard_latency_us_baseline"]) == (270, 279, 10.0)
    kinds = {f["kind"]: f["guard"] for f in data["findings"]}
    assert kinds["guard_count_grew"]["baseline"] == 270
    assert kinds["guard_latency_grew"]["margin"] == {"factor": 4.0, "floor_us": 20.0}
    markdown = render_markdown(result)
    assert "**guard_count_grew**" in markdown and "cold CPU cache" in markdown
    junit = render_junit(result)
    assert 'type="guard_count_grew"' in junit and 'type="guard_latency_grew"' in junit
    annotations = render_annotations(result)
    assert "::error " in annotations and "title=guarddiag guard_count_grew" in annotations


def test_guard_settings_from_pyproject_env_and_their_errors(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.guarddiag]\nmax_guards = 300\nmax_guard_latency_us = 500\nguard_latency_factor = 3\n"
        "scripts = [{path = 'g.py', max_guards = 100, max_guard_latency_us = 80.5}]\n"
    )
    s = load_settings(tmp_path, {"GUARDDIAG_GUARD_LATENCY_FLOOR_US": "20"}, {})
    assert (s.max_guards, s.max_guard_latency_us, s.guard_latency_factor, s.guard_latency_floor_us) == (300, 500.0, 3.0, 20.0)
    assert (s.scripts[0].max_guards, s.scripts[0].max_guard_latency_us) == (100, 80.5)
    (tmp_path / "pyproject.toml").write_text("[tool.guarddiag]\nguard_latency_factor = 0.5\n")
    with pytest.raises(InputError, match="'guard_latency_factor' must be a factor of 1 or more"):
        load_settings(tmp_path, {}, {})


def test_a_baseline_with_a_bad_latency_is_one_clear_error(tmp_path: Path):
    text = baseline_io.to_yaml(baseline_io.from_runs({"g.py": _run()}, tmp_path))
    (tmp_path / "b.yaml").write_text(text.replace("guard_latency_us: 64.0", "guard_latency_us: fast"))
    with pytest.raises(InputError, match=r"functions\[0\].guard_latency_us: expected microseconds"):
        baseline_io.load(tmp_path / "b.yaml")
