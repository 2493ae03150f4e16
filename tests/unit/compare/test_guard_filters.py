"""What removes guards: the version table, the check of a --guard-filter name, compare's guard rows on two
recorded logs of tests/fixtures/guardfilters (no torch run; tests/e2e/compare/test_guard_filters.py applies
each helper to a real model)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from guarddiag.compare import VariantResult, build_report, plan_compare
from guarddiag.errors import InputError
from guarddiag.flags import catalog_from_dict, check_flags
from guarddiag.guardfigures import FEWER, INCOMPARABLE, MORE, NOISE, SAME, UNKNOWN, count_change, function_figures, latency_change
from guarddiag.guardfilters import (
    CODE_CHANGE,
    GUARD_FILTERS,
    REMOVERS,
    filter_config,
    filter_spec,
    guard_filter,
    guard_filter_since,
)
from guarddiag.model import TorchMetrics
from guarddiag.pipeline import parse_logs
from guarddiag.render import FORMATS
from guarddiag.render.compare import COMPARE_SCHEMA, render_compare
from guarddiag.render.guardfilters import DROPS, GIVES_UP, NEEDS, removers_text
from tests.conftest import FIXTURES
from tests.documents import assert_document
from tests.unit.reports import reports

HERE = FIXTURES / "guardfilters"
INBUILT = "skip_guard_on_inbuilt_nn_modules_unsafe"


def test_every_row_has_its_words_and_a_version():
    names = [r.name for r in REMOVERS]
    assert len(names) == len(set(names))
    for row in REMOVERS:
        assert row.drops in DROPS and row.gives_up in GIVES_UP and (not row.needs or row.needs in NEEDS)
        assert (2, 0) <= row.since <= (2, 14)
    assert {r.name for r in GUARD_FILTERS} == {
        INBUILT, "skip_guard_on_all_nn_modules_unsafe", "keep_tensor_guards_unsafe", "skip_guard_on_globals_unsafe",
        "keep_portable_guards_unsafe", "skip_all_guards_unsafe",
    }
    # The stance is set by the script after warm-up: listed, never applied by guarddiag.
    (stance,) = [r for r in REMOVERS if r.applied == CODE_CHANGE]
    assert stance.name == "skip_guard_eval_unsafe"
    text = removers_text()
    assert "torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe (torch 2.9+)" in text
    assert "compare cannot apply it" in text


def test_a_filter_name_is_checked_and_the_first_torch_with_it_travels_to_the_child():
    assert filter_config(f"torch.compiler.{INBUILT}") == ("compile.guard_filter_fn", INBUILT)
    assert filter_spec("keep_tensor_guards_unsafe") == "compile.guard_filter_fn=keep_tensor_guards_unsafe"
    with pytest.raises(InputError, match=f"did you mean {INBUILT}"):
        guard_filter("skip_guard_on_inbuilt_modules")
    assert guard_filter_since((("recompile_limit", "16"), filter_config("skip_all_guards_unsafe"))) == "2.10"
    assert guard_filter_since((("recompile_limit", "16"),)) is None


def _catalog():
    return catalog_from_dict(json.loads((FIXTURES / "flags" / "torch-2.13.0.json").read_text()))


def test_compare_plans_a_filter_as_a_flip_beside_config_flags():
    plan = plan_compare(_catalog(), [filter_spec(INBUILT), "install_free_tensors=true"], False, ["py"])
    assert [v.flags for v in plan.variants] == [(("compile.guard_filter_fn", INBUILT),), (("install_free_tensors", "true"),)]
    check_flags(_catalog(), plan.variants[0].flags)  # the spawn precheck takes it, as the child will
    with pytest.raises(InputError, match="give the helper to try"):
        plan_compare(_catalog(), ["compile.guard_filter_fn="], False, ["py"])
    with pytest.raises(InputError, match="not a guard_filter_fn helper"):
        plan_compare(_catalog(), ["compile.guard_filter_fn=nosuch"], False, ["py"])


def test_latency_is_a_change_only_past_torchs_noise():
    assert latency_change(200.0, 150.0) == NOISE  # 1.3x: what two runs of one configuration give
    assert latency_change(300.0, 120.0) == NOISE  # 2.5x: what a loaded machine can do to one configuration
    assert latency_change(45.6, 130.9) == NOISE  # an unchanged configuration on a loaded CI machine (the README's compare)
    assert latency_change(1000.0, 90.0) == FEWER  # past x4
    assert latency_change(20.0, 185.0) == MORE  # past +150 us
    assert latency_change(4.0, 120.0) == NOISE  # 30x, but within 150 us
    assert latency_change(None, 12.0) == UNKNOWN
    assert latency_change(9.0, 310.0, same_torch=False) == INCOMPARABLE  # torch 2.7 averages 50 warm checks, 2.13 times one cold
    assert (count_change(191, 55), count_change(6, 6), count_change(None, 1)) == (FEWER, SAME, UNKNOWN)


def test_figures_take_the_newest_entry_and_the_sum():
    run = parse_logs([str(HERE / "baseline.log")])
    (f,) = run.functions
    (entry,) = f.guard_entries
    g = function_figures(f)
    # The listing's leaves and torch's logged latency; torch's count is in its record of the run only.
    assert (g.entries, g.listed_last, g.listed_sum, g.latency_last_us) == (1, entry.leaves, entry.leaves, entry.latency_us)
    assert g.torch_count_last is None  # not known, never 0
    metrics = (TorchMetrics(entry.compile_id, guard_count=186, guard_latency_us=65.0),
               TorchMetrics(replace(entry.compile_id, number=1), guard_count=190, guard_latency_us=80.0))
    g = function_figures(replace(f, torch_metrics=metrics))
    assert (g.entries, g.torch_count_last, g.torch_count_sum) == (2, 190, 376)
    # The newest entry has no listing: its leaves are not known, and neither is their sum.
    assert (g.listed_last, g.listed_sum, g.latency_last_us, g.latency_sum_us) == (None, None, 80.0, entry.latency_us + 80.0)


def _report():
    catalog = _catalog()
    plan = plan_compare(catalog, [filter_spec(INBUILT)], False, ["py"])
    base = replace(parse_logs([str(HERE / "baseline.log")]), source="run", log_path=str(HERE / "baseline.log"))
    filtered = replace(parse_logs([str(HERE / "skip_inbuilt.log")]), source="run", log_path=str(HERE / "skip_inbuilt.log"))
    return build_report(plan, [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(filtered))], catalog)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_gives_guards_before_and_after_beside_recompiles(fmt: str):
    out = assert_document(render_compare(_report(), fmt), fmt, COMPARE_SCHEMA)
    if fmt in ("json", "yaml"):
        base, after = out["guards"]
        assert base["label"] == "baseline" and after["label"] == f"compile.guard_filter_fn={INBUILT}"
        assert base["listed_last"] > 150 and after["listed_last"] < base["listed_last"] / 2
        # torch logged 59.81 us then 48.97 us: within its noise, not a win.
        assert after["listed_change"] == FEWER and after["latency_change"] == NOISE
        return
    assert "fewer guards, latency within noise" in out
    assert "is called noise, not a win" in out


def test_compare_without_flag_tries_the_mildest_filter_only_on_guard_heavy_functions():
    from guarddiag.guardfilters import GUARD_HEAVY, guard_heavy_flips
    from guarddiag.render.guardfilters import guard_heavy_line

    assert guard_heavy_flips((2, 13), [186, None, GUARD_HEAVY]) == (("compile.guard_filter_fn", INBUILT),)
    assert guard_heavy_flips((2, 13), [186, None]) == ()
    assert guard_heavy_flips((2, 7), [5000]) == ()  # no such helper in that torch
    assert guard_heavy_flips(None, [5000]) == ()
    assert "not run (over --max-flips)" in guard_heavy_line(INBUILT, True)
    assert "gives up: replacing or changing a torch module's weights" in guard_heavy_line(INBUILT, False)


def test_a_restarted_compile_is_one_entry_in_the_listing_and_torchs_record():
    """A graph break restarts a compile: the listing names the entry 0/0_1, torch's record 0/0 (bench's
    guard_heavy_model.py): one entry with both figures (was: two half entries, torch's count lost)."""
    (f,) = parse_logs([str(HERE / "baseline.log")]).functions
    (entry,) = f.guard_entries
    restarted = replace(entry, compile_id=replace(entry.compile_id, attempt=1))
    f = replace(f, guard_entries=(restarted,), torch_metrics=(TorchMetrics(entry.compile_id, guard_count=186, guard_latency_us=60.0),))
    g = function_figures(f)
    assert (g.entries, g.listed_last, g.torch_count_last) == (1, entry.leaves, 186)


def test_a_tree_of_no_guard_has_no_leaves_not_an_unknown_count():
    (f,) = parse_logs([str(HERE / "skip_all.log")]).functions
    g = function_figures(f)
    assert (g.listed_last, g.listed_sum) == (0, 0)
    assert g.latency_last_us is not None and g.latency_last_us < 50


@pytest.mark.parametrize("fmt", FORMATS)
def test_flags_guard_removers_marks_what_the_target_torch_lacks(fmt: str):
    from guarddiag.render.guardfilters import REMOVERS_SCHEMA, render_removers

    out = assert_document(render_removers("2.8.0", (2, 8), fmt), fmt, REMOVERS_SCHEMA)
    if fmt in ("json", "yaml"):
        rows = {r["name"]: r for r in out["removers"]}
        assert rows[INBUILT]["in_this_torch"] is False and rows["skip_guard_eval_unsafe"]["in_this_torch"] is True
        assert rows["skip_guard_eval_unsafe"]["kind"] == CODE_CHANGE
        return
    lines = out.replace("\\", "").replace("`", "").splitlines()
    assert any("skip_guard_on_all_nn_modules_unsafe (torch 2.9+): not known in torch 2.8" in line for line in lines)
    (stance,) = [line for line in lines if "skip_guard_eval_unsafe (torch" in line]
    assert stance.endswith("skip_guard_eval_unsafe (torch 2.6+)")


def test_a_filter_is_never_credited_with_removing_a_cause():
    """A filter that stops checking a cause's guard removes its recompiles by running stale code: compare
    shows the recompiles before -> after in its diff, but no cause outcome (nor verdict, nor fix) names it."""
    catalog = _catalog()
    plan = plan_compare(catalog, [filter_spec("skip_all_guards_unsafe")], False, ["py"])
    base = replace(parse_logs([str(HERE / "vary_baseline.log")]), source="run")
    filtered = replace(parse_logs([str(HERE / "vary_skip_all.log")]), source="run")
    report = build_report(plan, [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(filtered))], catalog)
    assert report.causes and all(not c.outcomes for c in report.causes)
    assert (report.diffs[0].recompiles_before, report.diffs[0].recompiles_after) == (2, 0)
