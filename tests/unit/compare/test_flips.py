"""The flip plan of `compare` without --flag, what each flip did to each cause, and the verdicts kept for
`run` and `explain`: on real recorded logs (tests/fixtures/logs, tests/fixtures/flips) and the flag
catalogs of real torch 2.13.0 and 2.4.1 (tests/fixtures/flags), no torch run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from guarddiag.compare import ComparePlan, Variant, VariantResult, build_report, flip_variants
from guarddiag.explain import listings_of
from guarddiag.flags import catalog_from_dict
from guarddiag.flips import FLIPS, KEEPS_COMPILED, cause_facts, plan_flips
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines
from guarddiag.render import FORMATS
from guarddiag.render.compare import render_compare
from guarddiag.render.flips import advice_lines, apply_line, cause_lines, outcome_sentence
from guarddiag.report import run_report
from guarddiag.verdicts import NO_EFFECT, NOT_VERIFIED, VERIFIED, keep_verdicts, load_verdicts, run_advice
from tests.conftest import FIXTURES, LOGS, ROOT, in_checkout
from tests.unit.reports import reports

FLIPS_LOGS = FIXTURES / "flips"


def _catalog(version: str):
    return catalog_from_dict(json.loads((FIXTURES / "flags" / f"torch-{version}.json").read_text()))


def _run(path, torch_version: str = "2.13.0+cpu", script: str | None = None, flags: dict[str, str] | None = None) -> Run:
    functions, stats = build_from_lines(in_checkout(path.read_text(encoding="utf-8")).splitlines(keepends=True))
    return Run(functions=functions, parse=stats, torch_version=torch_version, source="run", script=script, flags=flags or {})


def _plan(log: str, version: str = "2.13.0", **kw):
    run = _run(LOGS / f"torch-{version}" / log, version)
    return plan_flips(_catalog(version), run, **kw)


def _candidates(target) -> list[tuple[str, str]]:
    return [c.config for c in target.candidates]


# --- which flips a cause gets -----------------------------------------------------------------------


def test_an_int_attribute_of_an_nn_module_gets_allow_unspec_int_on_nn_module_and_its_source_by_name():
    (target,) = _plan("module_int_attribute.log").targets
    assert {"int", "nn_module", "named", "hint:value"} <= target.facts  # torch's own hint says nn.Module
    assert _candidates(target) == [("allow_unspec_int_on_nn_module", "true"), ("compiler.dynamic_sources", "L['self'].layer_idx")]
    # assume_static_by_default does not reach an nn.Module's int (measured: 5 of 5 stay): not offered for it.
    assert "assume_static_by_default" not in {f for f, _ in _candidates(target)}


def test_an_int_of_a_dataclass_is_not_offered_allow_unspec_int_on_nn_module():
    """tests/corpus/dataclass_config.py on inductor: `cfg.top_k` is a dataclass's int; the nn.Module flag removes nothing there."""
    run = _run(FLIPS_LOGS / "torch-2.13.0" / "dataclass_config.log")
    (target,) = plan_flips(_catalog("2.13.0"), run).targets
    assert "nn_module" not in target.facts and "int" in target.facts
    assert _candidates(target) == [("compiler.dynamic_sources", "L['cfg'].top_k"), ("assume_static_by_default", "false")]


def test_size_causes_name_every_tensor_that_changed_with_them_and_sizes_0_1_get_unbacked_flips():
    """scenarios/tensor_shape.py: x and y change batch together; batch 1 is a size-0/1 guard (`2 <= x.size()[0]`)."""
    targets = {t.category: t for t in _plan("tensor_shape.log").targets}
    size, shape = targets["tensor"], targets["dynamic_shape"]
    assert "size01" not in size.facts and _candidates(size) == [
        ("compiler.dynamic_sources", "L['x']:0,L['y']"),
        ("assume_static_by_default", "false"),
    ]
    assert "size01" in shape.facts and _candidates(shape) == [
        ("compiler.unbacked_sources", "L['x']:0,L['y']"),
        ("fx.backed_size_oblivious", "true"),
        ("automatic_dynamic_shapes_mark_as", "unbacked"),
    ]


def test_a_torch_without_the_flag_or_its_per_dim_syntax_gets_what_it_has():
    """torch 2.4.1 (its real catalog): no torch.compiler.config, no backed_size_oblivious, no mark_as."""
    targets = {t.category: t for t in _plan("tensor_shape.log", "2.4.1").targets}
    assert _candidates(targets["tensor"]) == [("assume_static_by_default", "false")]
    assert {(s.flag, s.why) for s in targets["tensor"].skipped} == {("compiler.dynamic_sources", "not_in_torch")}
    skipped = {s.flag: s.why for s in targets["dynamic_shape"].skipped}
    assert skipped == {"compiler.unbacked_sources": "not_in_torch", "fx.backed_size_oblivious": "not_in_torch",
                       "automatic_dynamic_shapes_mark_as": "not_in_torch"}


def test_inline_inbuilt_nn_modules_only_where_it_still_does_something():
    """A fresh module instance per call is an identity recompile on torch 2.4.1, where inlining is off."""
    (old,) = _plan("fresh_module_instance.log", "2.4.1").targets
    assert "module_object" in old.facts and _candidates(old) == [("inline_inbuilt_nn_modules", "true")]
    # The same recorded log against torch 2.13's catalog: the flag is a deprecated no-op there.
    run = _run(LOGS / "torch-2.4.1" / "fresh_module_instance.log", "2.4.1")
    (new,) = plan_flips(_catalog("2.13.0"), run).targets
    assert _candidates(new) == [] and [(s.flag, s.why) for s in new.skipped] == [("inline_inbuilt_nn_modules", "no_op")]


def test_specialize_float_is_planned_only_where_it_is_not_already_in_force():
    (old,) = _plan("float_hyperparameter.log", "2.4.1").targets
    assert _candidates(old)[0] == ("specialize_float", "false")
    (new,) = _plan("float_hyperparameter.log").targets
    assert ("specialize_float", "in_force") in {(s.flag, s.why) for s in new.skipped}
    assert _candidates(new) == [("assume_static_by_default", "false")]


def test_a_limit_hit_gets_a_raised_limit_that_keeps_the_code_compiled_and_a_string_value_gets_nothing():
    targets = _plan("recompile_limit.log").targets
    limited = next(t for t in targets if t.limit_hits)
    raised = next(c for c in limited.candidates if c.flag == "recompile_limit")
    assert raised.value == "64" and raised.effect == KEEPS_COMPILED and raised.cost == "more_compiles"
    (code_path,) = _plan("dict_value.log").targets  # cfg['activation'] == 'gelu': a string picks a code path
    assert _candidates(code_path) == [] and not code_path.skipped


def test_flips_are_deduplicated_across_causes_and_capped_first_candidate_of_every_cause_first():
    full = _plan("tensor_shape.log")
    assert len(full.flips) == len(set(full.flips)) == 5
    capped = _plan("tensor_shape.log", max_flips=2)
    firsts = {t.candidates[0].config for t in capped.targets}
    assert set(capped.flips) == firsts and len(capped.capped) == 3
    assert set(capped.flips) | set(capped.capped) == set(full.flips)


def test_every_row_of_the_table_names_a_cost_and_an_effect_the_words_know():
    from guarddiag.flips import SKIP_REASONS
    from guarddiag.render.flips import _IGNORED, _SKIPPED, COSTS
    from guarddiag.verdicts import IGNORED

    assert {row.cost for row in FLIPS} <= set(COSTS) and set(_SKIPPED) == set(SKIP_REASONS) and set(_IGNORED) == set(IGNORED)
    assert apply_line("compiler.dynamic_sources", "L['x']:0") == "torch.compiler.config.dynamic_sources = \"L['x']:0\""
    assert apply_line("fx.backed_size_oblivious", "true") == "torch.fx.experimental._config.backed_size_oblivious = True"
    assert apply_line("recompile_limit", "64") == "torch._dynamo.config.recompile_limit = 64"


def test_torchs_hint_is_what_tells_an_nn_module_int_from_another():
    from guarddiag.model import Cause

    plain = Cause("value", "cfg.top_k", "cfg.top_k == 3", "cfg.top_k == 3", "EQUALS_MATCH")
    assert "nn_module" not in cause_facts(plain)
    assert "nn_module" in cause_facts(replace(plain, torch_hint="nn_module_int"))
    sub = Cause("value", "L['m']._modules['attn'].heads", "L['m']._modules['attn'].heads == 4", "")
    assert "nn_module" in cause_facts(sub)  # an attribute of a submodule: its owner is an nn.Module


# --- what each flip did to each cause, measured on recorded runs -------------------------------------


def _report(baseline_log, variant_log, flips, config: tuple[str, str]):
    base = _run(baseline_log)
    variant = _run(variant_log)
    plan = ComparePlan(Variant("baseline", "py"), (Variant(f"{config[0]}={config[1]}", "py", (config,)),))
    results = [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(variant))]
    return build_report(plan, results, _catalog("2.13.0"), flips)


def test_a_flip_that_removes_recompiles_is_measured_per_cause():
    base_log = LOGS / "torch-2.13.0" / "module_int_attribute.log"
    flips = plan_flips(_catalog("2.13.0"), _run(base_log))
    config = ("allow_unspec_int_on_nn_module", "true")
    report = _report(base_log, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log", flips, config)
    (cause,) = report.causes
    (o,) = cause.outcomes
    assert (o.before, o.after, o.removed, o.works, o.candidate) == (5, 1, 4, True, True)
    assert outcome_sentence(o, times=False) == "removes 4 of 5 recompiles; output not compared"


def test_a_raised_limit_keeps_code_compiled_at_the_price_of_compiles_never_a_fix_never_worse():
    base_log = LOGS / "torch-2.13.0" / "recompile_limit.log"
    flips = plan_flips(_catalog("2.13.0"), _run(base_log))
    report = _report(base_log, FLIPS_LOGS / "torch-2.13.0" / "recompile_limit.recompile_limit64.log", flips, ("recompile_limit", "64"))
    limited = next(c for c in report.causes if c.target.limit_hits)
    o = next(o for o in limited.outcomes if o.flag == "recompile_limit")
    assert o.effect == KEEPS_COMPILED and o.keeps_compiled and o.works
    assert o.compiles_after > o.compiles_before and o.limit_hits_after == 0
    said = outcome_sentence(o, times=False)
    assert said.startswith("keeps it compiled (1 limit hit -> 0) at the price of") and "the recompiles stay" in said
    assert "removes" not in said
    (delta,) = [f for f in report.diffs[0].functions if f.name == "rollout"]
    assert delta.status == "kept_compiled"


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_per_cause_report_in_every_format(fmt):
    base_log = LOGS / "torch-2.13.0" / "module_int_attribute.log"
    flips = plan_flips(_catalog("2.13.0"), _run(base_log))
    report = _report(base_log, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log", flips,
                     ("allow_unspec_int_on_nn_module", "true"))
    text = render_compare(report, fmt)
    if fmt in ("json", "yaml"):
        import yaml

        doc = yaml.safe_load(text)
        (cause,) = doc["causes"]
        assert cause["recompiles"] == 5 and "nn_module" in cause["facts"]
        assert [(o["flag"], o["removed"], o["works"]) for o in cause["outcomes"]] == [("allow_unspec_int_on_nn_module", 4, True)]
        assert doc["flips"]["planned"][0] == {"flag": "allow_unspec_int_on_nn_module", "value": "true"}
    else:
        assert "removes 4 of 5 recompiles" in text
        assert "apply: torch." in text and "allow_unspec_int_on_nn_module = True; cost: the int becomes a symbolic value" in text
        assert "over --max-flips" not in text


def test_flip_variants_are_one_configuration_per_flip():
    flips = _plan("tensor_shape.log")
    variants = flip_variants(flips, "py")
    assert [v.flags for v in variants] == [(f,) for f in flips.flips]


# --- verdicts kept for run and explain ----------------------------------------------------------------


# The baseline log's guard listings: the facts a run's hint is decided from (an nn.Module's int attribute).
_LISTINGS = listings_of((LOGS / "torch-2.13.0" / "module_int_attribute.log").open(encoding="utf-8")).by_frame


def _verdict_setup(tmp_path, variant_log, script: str = str(ROOT / "scenarios" / "module_int_attribute.py")):
    base = _run(LOGS / "torch-2.13.0" / "module_int_attribute.log", script=script)
    flips = plan_flips(_catalog("2.13.0"), base)
    config = ("allow_unspec_int_on_nn_module", "true")
    plan = ComparePlan(Variant("baseline", "py"), (Variant("x", "py", (config,)),))
    variant = _run(variant_log, script=script)
    results = [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(variant))]
    report = build_report(plan, results, _catalog("2.13.0"), flips)
    keep_verdicts(report, tmp_path)
    return base


def test_a_hint_compare_verified_says_so_in_the_run_report(tmp_path):
    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    advice = run_advice(base, load_verdicts(base, tmp_path), _LISTINGS)
    (cause,) = advice.functions[0].causes
    assert cause.hint.hint == "allow_unspec_int_on_nn_module" and cause.check.status == VERIFIED
    lines = advice_lines(cause)
    assert lines[0].startswith("fix: `self.layer_idx` is an int attribute of an nn.Module")
    assert lines[1].endswith(": torch._dynamo.config.allow_unspec_int_on_nn_module = True")  # the line to write
    assert lines[2] == "  verified by compare (allow_unspec_int_on_nn_module=true): removes 4 of 5 recompiles; output not compared"
    # Another script, other arguments or another torch: nothing is known.
    other = replace(base, argv=("--layers", "8"))
    assert run_advice(other, load_verdicts(other, tmp_path), _LISTINGS).functions[0].causes[0].check.status == NOT_VERIFIED


def test_a_hint_a_compare_showed_to_do_nothing_is_not_shown_as_a_fix(tmp_path):
    # The baseline's own log as the flip's: the flip "changed nothing", as it does for a dataclass's int.
    base = _verdict_setup(tmp_path, LOGS / "torch-2.13.0" / "module_int_attribute.log")
    (cause,) = run_advice(base, load_verdicts(base, tmp_path), _LISTINGS).functions[0].causes
    assert cause.check.status == NO_EFFECT
    (line,) = advice_lines(cause)
    assert line.startswith("not a fix here: compare measured allow_unspec_int_on_nn_module=true: removes none of 5 recompiles")
    assert not any(text.startswith("fix:") for text in advice_lines(cause))


def test_not_verified_names_the_exact_compare_that_verifies_it(tmp_path):
    base = replace(_run(LOGS / "torch-2.13.0" / "module_int_attribute.log", script="my model.py"), argv=("--steps", "3"))
    (cause,) = run_advice(base, load_verdicts(base, tmp_path), _LISTINGS).functions[0].causes
    assert cause.check.status == NOT_VERIFIED
    assert cause.check.command == "guarddiag compare 'my model.py' --flag allow_unspec_int_on_nn_module=true -- --steps 3"


def test_a_verdict_file_of_another_version_is_ignored_and_said_to_be(tmp_path):
    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["schema"] == "guarddiag.verdicts/2" and doc["key"]["torch_version"] == "2.13.0+cpu"
    path.write_text(json.dumps(doc | {"schema": "guarddiag.verdicts/99"}))
    kept = load_verdicts(base, tmp_path)
    assert kept.verdicts == () and (kept.ignored, kept.schema) == ("other_schema", "guarddiag.verdicts/99")
    from guarddiag.render.flips import advice_note

    assert "is not used (written by another guarddiag: schema guarddiag.verdicts/99)" in advice_note(run_advice(base, kept, _LISTINGS))
    path.write_text("{ torn")
    assert load_verdicts(base, tmp_path).ignored == "not_json"
    # A later compare replaces it.
    _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    assert load_verdicts(base, tmp_path).verdicts


def test_a_verdict_file_of_version_1_is_read_and_its_words_ignored(tmp_path):
    """Version 1 kept each cause's words beside its key (``subject``); version 2 keeps the key alone, and a
    file an earlier guarddiag wrote still verifies the same hints."""
    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["verdicts"] and all(set(v) == {"function", "cause", "outcome", "compared_at"} for v in doc["verdicts"])
    now = load_verdicts(base, tmp_path).verdicts
    old = doc | {"schema": "guarddiag.verdicts/1", "verdicts": [v | {"subject": "value of `self.layer_idx`"} for v in doc["verdicts"]]}
    path.write_text(json.dumps(old))
    kept = load_verdicts(base, tmp_path)
    assert kept.ignored == "" and kept.verdicts == now
    assert run_advice(base, kept, _LISTINGS).functions[0].causes[0].check.status == VERIFIED


def test_a_later_compare_adds_to_what_an_earlier_one_measured(tmp_path):
    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    first = load_verdicts(base, tmp_path).verdicts
    _verdict_setup(tmp_path, LOGS / "torch-2.13.0" / "module_int_attribute.log")  # the same flip measured again
    again = load_verdicts(base, tmp_path).verdicts
    assert len(first) == len(again) == 1 and again[0].outcome.removed == 0  # the newest measurement wins


def test_a_run_with_its_own_flags_is_told_that_compare_measures_against_torchs_defaults(tmp_path):
    from guarddiag.render.flips import check_sentence

    base = _run(LOGS / "torch-2.13.0" / "module_int_attribute.log", script="model.py", flags={"recompile_limit": "16"})
    (cause,) = run_advice(base, load_verdicts(base, tmp_path), _LISTINGS).functions[0].causes
    assert check_sentence(cause.check) == (
        "not verified for a run with --flag recompile_limit=16: guarddiag compare model.py --flag "
        "allow_unspec_int_on_nn_module=true measures it against torch's defaults"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_hostile_script_name_in_a_hint_command_is_escaped_in_every_format(tmp_path, fmt):
    from guarddiag.render import render

    hostile = "evil\x1b]52;c;SGVsbG8=\x07\u202e\n::error::x.py"
    base = _run(LOGS / "torch-2.13.0" / "module_int_attribute.log", script=hostile)
    text = render(run_report(base, run_advice(base, load_verdicts(base, tmp_path), _LISTINGS)), fmt)
    assert "\x1b" not in text and "\u202e" not in text and "\n::error::" not in text
    assert "allow_unspec_int_on_nn_module=true" in text


def test_a_flip_that_moves_recompiles_to_another_function_is_no_fix():
    """As compiler.unbacked_sources did on tests/corpus/kv_cache_decode.py (inductor): the outer forward
    stopped recompiling, a graph break's inner function recompiled as often. Here: the flip's run is the
    allow_unspec log with recompile_limit.log's 7-times recompiling function beside it (real logs both)."""
    base_log = LOGS / "torch-2.13.0" / "module_int_attribute.log"
    flips = plan_flips(_catalog("2.13.0"), _run(base_log))
    report = _report(base_log, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log", flips,
                     ("allow_unspec_int_on_nn_module", "true"))
    moved = _run(LOGS / "torch-2.13.0" / "recompile_limit.log")
    variant = report.results[1]
    variant = replace(variant, reports=reports(replace(variant.run, functions=(*variant.run.functions, *moved.functions))))
    report = build_report(report.plan, [report.results[0], variant], _catalog("2.13.0"), flips)
    (o,) = report.causes[0].outcomes
    assert o.removed == 4 and not o.fewer_in_run and not o.works
    assert "in the whole run 5 recompiles -> 8: not fewer, so no fix" in outcome_sentence(o, times=False)


# --- a hint's own flip: planned first, verified exactly ----------------------------------------------------


def test_the_flip_a_hint_names_is_planned_first_as_the_hint_writes_it():
    """ragged-like sizes: tensor_shape.log's hint names `x` (with its dim) in the dynamic-sources setting; compare
    measures exactly that value first, whatever the table's own rows build, so that the hint itself is verified."""
    from guarddiag.verdicts import hinted_flips

    log = LOGS / "torch-2.13.0" / "tensor_shape.log"
    run = _run(log, script="x.py")
    hinted = hinted_flips(run, listings_of(log.open(encoding="utf-8")).by_frame)
    size = next(configs for (_, key), configs in hinted.items() if key[0] == "tensor")
    assert size == (("compiler.dynamic_sources", "L['x']:0,L['y']:0"),)  # the batch's tensors together, by dim
    target = next(t for t in plan_flips(_catalog("2.13.0"), run, hinted=hinted).targets if t.category == "tensor")
    assert _candidates(target)[0] == size[0]


def test_a_free_text_flag_takes_commas_in_its_one_value():
    """`--flag compiler.dynamic_sources=L['x']:0,L['y']` is one configuration (torch reads the list), not two
    values to try; a boolean's `NAME=V1,V2` still tries each value."""
    from guarddiag.compare import plan_compare

    catalog = _catalog("2.13.0")
    plan = plan_compare(catalog, ["compiler.dynamic_sources=L['x']:0,L['y']", "specialize_float=true,false"], False, ["py"])
    assert [v.flags for v in plan.variants] == [
        (("compiler.dynamic_sources", "L['x']:0,L['y']"),),
        (("specialize_float", "true"),),
        (("specialize_float", "false"),),
    ]


def test_a_hint_is_verified_by_its_own_flip_not_by_another_value_of_its_flag(tmp_path):
    """A compare that measured the flag with another value than the hint writes does not verify the hint: the
    measurement is of another change."""
    from guarddiag.explain.model import CodeLine, FixHint
    from guarddiag.verdicts import hint_check

    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    verdicts = load_verdicts(base, tmp_path)
    (f,) = base.functions
    causes = tuple(cause_keys_of(f))
    line = CodeLine("x = True", "top_of_script", setting="torch._dynamo.config.allow_unspec_int_on_nn_module", value="True")
    same = FixHint(causes, 5, "allow_unspec_int_on_nn_module", "self.layer_idx", lines=(line,))
    assert hint_check(same, causes, f, verdicts, base).status == VERIFIED
    other = replace(same, lines=(replace(line, value="False"),))
    check = hint_check(other, causes, f, verdicts, base)
    assert check.status == NOT_VERIFIED and "--flag allow_unspec_int_on_nn_module=false" in check.command


def cause_keys_of(f):
    from guarddiag.verdicts import cause_keys

    return cause_keys(f).keys()


def _load_soon(base, folder):
    """load_verdicts in a thread, given 10 s: a FIFO at the path would make it wait for a writer forever."""
    import threading

    found = []
    worker = threading.Thread(target=lambda: found.append(load_verdicts(base, folder)), daemon=True)
    worker.start()
    worker.join(10)
    assert found, "load_verdicts waited on the verdict path"
    return found[0]


def test_a_verdict_path_that_holds_no_regular_file_is_named_never_read_through_or_waited_on(tmp_path):
    import os

    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    (path,) = tmp_path.glob("*.json")
    saved = tmp_path / "elsewhere" / "kept.json"
    saved.parent.mkdir()
    path.rename(saved)
    cases = {"fifo": lambda: os.mkfifo(path), "device": lambda: path.symlink_to("/dev/zero"), "folder": path.mkdir,
             "link to a verdict file": lambda: path.symlink_to(saved)}
    for name, make in cases.items():
        make()
        kept = _load_soon(base, tmp_path)
        assert (kept.ignored, kept.verdicts) == ("not_a_file", ()), name
        from guarddiag.render.flips import advice_note

        assert "its path holds no regular file" in advice_note(run_advice(base, kept, _LISTINGS)), name
        if name != "folder":
            # The next compare replaces what is at the path; it writes through no link (a planted one could name any file).
            before = saved.read_bytes()
            _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
            assert path.is_file() and not path.is_symlink() and saved.read_bytes() == before, name
            assert load_verdicts(base, tmp_path).verdicts, name
            path.unlink()
        else:
            path.rmdir()


@pytest.mark.parametrize(
    "damage",
    ["deep", "outcome_list", "count_string", "count_negative", "count_bool", "function_list", "line_string", "huge", "latin1"],
)
def test_a_damaged_verdict_file_is_one_note_never_a_crash(tmp_path, damage):
    from guarddiag.render import render
    from guarddiag.render.flips import advice_note

    base = _verdict_setup(tmp_path, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log")
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    outcome, function = doc["verdicts"][0]["outcome"], doc["verdicts"][0]["function"]
    edits = {
        "outcome_list": lambda: doc["verdicts"][0].update(outcome=[1]),
        "count_string": lambda: outcome.update(before="5"),
        "count_negative": lambda: outcome.update(after=-3),
        "count_bool": lambda: outcome.update(added=True),
        "function_list": lambda: doc["verdicts"][0].update(function=["forward"]),
        "line_string": lambda: function.update(line="30"),
    }
    if damage == "deep":
        path.write_text("[" * 100_000)
    elif damage == "huge":
        path.write_text(json.dumps(doc | {"pad": "x" * (17 * 1024 * 1024)}))
    elif damage == "latin1":
        path.write_bytes(json.dumps(doc).encode().replace(b"forward", b"forw\xe4rd"))
    else:
        edits[damage]()
        path.write_text(json.dumps(doc))
    kept = load_verdicts(base, tmp_path)
    assert kept.verdicts == () and kept.ignored in ("not_json", "damaged", "too_large")
    advice = run_advice(base, kept, _LISTINGS)
    assert advice.functions[0].causes[0].check.status == NOT_VERIFIED
    assert "is not used (" in advice_note(advice)
    for fmt in FORMATS:
        render(run_report(base, advice), fmt)


def _recorded(name: str) -> Run:
    """A run folder recorded with `guarddiag run` (its log and torch's own record of each compile), read as run reads it."""
    from guarddiag.runlogs import read_run_logs

    folder = FLIPS_LOGS / "torch-2.13.0" / name
    logs = read_run_logs(folder, folder / "torch.log", folder / "torch.compiles.jsonl")
    return Run(functions=logs.functions, parse=logs.stats, source="run", torch_version="2.13.0+cpu")


def test_a_flip_whose_compiles_fail_is_no_fix_though_the_recompiles_are_gone():
    """tests/fixtures/flips/static_backend.py: a backend that refuses dynamic shapes, errors suppressed. Made dynamic
    from the first compile, the function installs no code at all and every call runs eagerly: no recompile is left,
    and that is no fix (was: "removes 1 of 1 recompile", verified)."""
    base, flipped = _recorded("static_backend"), _recorded("static_backend.dynamic_sources")
    ((before,), (after,)) = base.functions, flipped.functions
    assert (before.compiles, before.recompiles, len(before.failed_compiles)) == (2, 1, 1)
    assert (after.compiles, after.recompiles, len(after.failed_compiles)) == (1, 0, 1)
    config = ("compiler.dynamic_sources", "L['x']:0")
    flips = plan_flips(_catalog("2.13.0"), base)
    assert config in flips.flips
    plan = ComparePlan(Variant("baseline", "py"), (Variant("x", "py", (config,)),))
    results = [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(flipped))]
    report = build_report(plan, results, _catalog("2.13.0"), flips)
    (cause,) = report.causes
    (o,) = cause.outcomes
    assert o.removed == 1 and o.lost_compiled_code and not o.works
    assert "no compile of the function installed code with it: its calls ran without compiled code, so no fix" in outcome_sentence(o)
    assert "apply:" not in render_compare(report, "table") and "no flip run removed its recompiles" in render_compare(report, "table")


def test_a_hint_of_several_settings_is_verified_by_the_compare_its_command_names(tmp_path):
    """tests/corpus/last_batch_one.py: the size-one hint writes two settings, and says the compare that runs them
    together verifies it. That compare (--flag A --flag B --combined) now keeps its measurement, and the next run
    says verified (was: a configuration of several flips was never kept, the hint stayed "not verified: <that
    command> measures it" after the command was run)."""
    script = str(ROOT / "tests" / "corpus" / "last_batch_one.py")
    log = LOGS / "torch-2.13.0" / "last_batch_one.log"
    base = _run(log, script=script)
    listings = listings_of(in_checkout(log.read_text(encoding="utf-8")).splitlines(keepends=True)).by_frame
    (cause,) = run_advice(base, load_verdicts(base, tmp_path), listings).functions[0].causes
    assert cause.hint.hint == "size_one" and cause.check.status == NOT_VERIFIED
    configs = (("fx.backed_size_oblivious", "true"), ("compiler.dynamic_sources", "L['xb']:0"))
    assert "--combined" in cause.check.command and all(f"{f}={v}" in cause.check.command.replace("'\"'\"'", "'") for f, v in configs)
    plan = ComparePlan(Variant("baseline", "py"), (*(Variant(f"{f}={v}", "py", ((f, v),)) for f, v in configs),
                                                   Variant("both", "py", configs)))
    single = _run(LOGS / "torch-2.13.0" / "last_batch_one.log", script=script)  # alone, neither removes the recompile
    both = _run(FLIPS_LOGS / "torch-2.13.0" / "last_batch_one.size_one.log", script=script)
    results = [VariantResult(plan.baseline, reports(base)), VariantResult(plan.variants[0], reports(single)),
               VariantResult(plan.variants[1], reports(single)), VariantResult(plan.variants[2], reports(both))]
    report = build_report(plan, results, _catalog("2.13.0"))
    keep_verdicts(report, tmp_path)
    (cause,) = run_advice(base, load_verdicts(base, tmp_path), listings).functions[0].causes
    assert cause.check.status == VERIFIED
    assert check_sentence_of(cause) == (
        "verified by compare (fx.backed_size_oblivious=true + compiler.dynamic_sources=L['xb']:0): removes 1 of 1 recompile; "
        "output not compared"
    )
    (measured,) = json.loads(render_compare(report, "json"))["causes"]
    assert [(o["flag"], o["also"], o["removed"], o["works"]) for o in measured["outcomes"]] == [
        ("fx.backed_size_oblivious", [], 0, False),
        ("fx.backed_size_oblivious", [["compiler.dynamic_sources", "L['xb']:0"]], 1, True),
    ]
    lines = cause_lines(report.causes[0], 6)
    assert "fx.backed_size_oblivious=true + compiler.dynamic_sources=L['xb']:0: removes 1 of 1 recompile; output not compared" in lines
    assert "    apply: torch.compiler.config.dynamic_sources = \"L['xb']:0\"" in lines


def check_sentence_of(cause):
    from guarddiag.render.flips import check_sentence

    return check_sentence(cause.check)


@pytest.mark.parametrize("how", [{"status": "timeout", "after": None}, {"status": "failed", "after": None}, {"unstable": True}])
def test_a_flip_whose_run_gave_no_verdict_leaves_its_hint_not_verified_never_not_a_fix(tmp_path, how):
    """A flip's run that hit --timeout (a busy machine), failed, or compiled differently each repeat measured nothing:
    the hint stays a fix, not verified, with the command that verifies it (was: "not a fix here: ... its run did not
    finish (timeout): no verdict", and the fix itself hidden)."""
    from guarddiag.compare import FlipOutcome
    from guarddiag.verdicts import Verdict, Verdicts, cause_keys, key_of

    base = _run(LOGS / "torch-2.13.0" / "module_int_attribute.log", script="model.py")
    (f,) = base.functions
    ((key,),) = cause_keys(f).values()
    outcome = FlipOutcome("allow_unspec_int_on_nn_module", "true", "removes", "dynamic_int", 5, 1, 0, 0, 6, 2, 0.3, 0.1, 0, "ok", False,
                          run_recompiles_before=5, run_recompiles_after=1)
    assert outcome.works
    kept = Verdicts(key_of(base), (Verdict(f.key, key, replace(outcome, **how), "now"),))
    (cause,) = run_advice(base, kept, _LISTINGS).functions[0].causes
    assert cause.check.status == NOT_VERIFIED
    lines = advice_lines(cause)
    assert lines[0].startswith("fix: `self.layer_idx` is an int attribute of an nn.Module")
    assert not any("not a fix here" in line for line in lines)
    said = {"timeout": "its run did not finish (timeout): no verdict", "failed": "its run did not finish (failed): no verdict"}
    assert (
        f"  not verified: compare ran allow_unspec_int_on_nn_module=true: {said.get(how.get('status'), 'the function')}" in "\n".join(lines)
    )


def test_verdicts_of_a_script_edited_since_are_not_used_and_said_to_be(tmp_path):
    """A compare measured the script as it was; the user edited it since (another int, another model): what the
    compare measured is not this script's (was: still "verified by compare: removes 4 of 5")."""
    from guarddiag.render.flips import advice_note

    script = tmp_path / "model.py"
    script.write_text("print('as compared')\n")
    folder = tmp_path / "verdicts"
    base = _verdict_setup(folder, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log", str(script))
    assert run_advice(base, load_verdicts(base, folder), _LISTINGS).functions[0].causes[0].check.status == VERIFIED
    script.write_text("print('edited')\n")
    kept = load_verdicts(base, folder)
    assert (kept.ignored, kept.verdicts) == ("script_changed", ())
    advice = run_advice(base, kept, _LISTINGS)
    assert advice.functions[0].causes[0].check.status == NOT_VERIFIED
    assert "is not used (the script's file changed since)" in advice_note(advice)
    # The next compare measures the script as it is now.
    _verdict_setup(folder, FLIPS_LOGS / "torch-2.13.0" / "module_int_attribute.allow_unspec.log", str(script))
    assert load_verdicts(base, folder).verdicts


def test_compare_without_flag_runs_the_settings_a_hint_writes_together():
    """The size-one hint writes two settings: compare without --flag runs them as one configuration, before any
    single flip and within --max-flips, so that the hint it verifies is the one written (was: only single flips,
    neither of which removes the recompile, and the hint stayed "not verified")."""
    from guarddiag.verdicts import hinted_combinations, hinted_flips

    log = LOGS / "torch-2.13.0" / "last_batch_one.log"
    run = _run(log, script="x.py")
    listings = listings_of(in_checkout(log.read_text(encoding="utf-8")).splitlines(keepends=True)).by_frame
    both = (("fx.backed_size_oblivious", "true"), ("compiler.dynamic_sources", "L['xb']:0"))
    assert hinted_combinations(run, listings) == (both,)
    plan = plan_flips(_catalog("2.13.0"), run, 3, hinted_flips(run, listings), hinted_combinations(run, listings))
    assert plan.combined == (both,) and len(plan.flips) == 2 and plan.capped
    assert [v.flags for v in flip_variants(plan, "py")][-1] == both
    one = plan_flips(_catalog("2.13.0"), run, 1, hinted_flips(run, listings), hinted_combinations(run, listings))
    assert (one.combined, one.flips) == ((both,), ())
    # A torch without one of the settings (2.4.1 has no fx.backed_size_oblivious): the combination is not planned.
    assert plan_flips(_catalog("2.4.1"), run, 6, None, (both,)).combined == ()
