"""Flag resolution and compare planning on the flag catalogs of real torch 2.13.0 and 2.4.1.

tests/fixtures/flags/torch-*.json were written by `_bootstrap.py --describe` in those versions.
"""

from __future__ import annotations

import json

import pytest

from guarddiag.compare import plan_compare
from guarddiag.errors import InputError
from guarddiag.flags import catalog_from_dict, parse_value
from tests.conftest import FIXTURES


def _catalog(version: str):
    return catalog_from_dict(json.loads((FIXTURES / "flags" / f"torch-{version}.json").read_text()))


def test_aliases_and_env_vars_come_from_torch_itself():
    new = _catalog("2.13.0")
    alias = new.resolve("cache_size_limit")
    assert alias.alias_of == "recompile_limit" and new.target(alias).name == "recompile_limit"
    assert new.resolve("automatic_dynamic_shapes").env == ("TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES",)
    assert new.resolve("dynamo.recompile_limit").value == 8
    assert new.resolve("inductor.max_autotune").type == "bool"
    old = _catalog("2.4.1")
    assert "recompile_limit" not in old.flags and old.resolve("cache_size_limit").alias_of is None
    assert old.resolve("inline_inbuilt_nn_modules").env == ("TORCHDYNAMO_INLINE_INBUILT_NN_MODULES",)


def test_typo_gets_the_closest_names():
    with pytest.raises(InputError, match="did you mean: automatic_dynamic_shapes"):
        _catalog("2.13.0").resolve("automatic_dynamic_shape")


def test_values_are_checked_against_the_type():
    cat = _catalog("2.13.0")
    assert parse_value(cat.resolve("recompile_limit"), "4") == 4
    assert parse_value(cat.resolve("specialize_float"), "TRUE") is True
    with pytest.raises(InputError, match="takes an integer"):
        parse_value(cat.resolve("recompile_limit"), "many")


def test_inline_inbuilt_nn_modules_is_a_no_op_on_2_13_and_a_real_flip_on_2_4():
    plan = plan_compare(_catalog("2.13.0"), ["inline_inbuilt_nn_modules"], False, ["py"])
    assert plan.variants == ()
    from guarddiag.render.compare import no_op_sentence

    (no_op,) = plan.no_ops
    assert no_op.flag == "inline_inbuilt_nn_modules" and no_op.torch_version.startswith("2.13.0") and "always True" in no_op.reason
    note = no_op_sentence(no_op)
    assert "inline_inbuilt_nn_modules does nothing in torch 2.13.0" in note and "always True" in note
    plan = plan_compare(_catalog("2.4.1"), ["inline_inbuilt_nn_modules"], False, ["py"])
    assert [v.flags for v in plan.variants] == [(("inline_inbuilt_nn_modules", "true"),)]


def test_boolean_flips_values_and_combined():
    plan = plan_compare(
        _catalog("2.13.0"), ["automatic_dynamic_shapes", "recompile_limit=2,16", "specialize_float"], True, ["py"]
    )
    labels = [v.label for v in plan.variants]
    assert labels == [
        "automatic_dynamic_shapes=false",
        "recompile_limit=2",
        "recompile_limit=16",
        "specialize_float=true",
        "automatic_dynamic_shapes=false + recompile_limit=2 + specialize_float=true",
    ]
    assert plan.baseline.flags == ()


def test_non_boolean_flag_needs_values():
    with pytest.raises(InputError, match="give the values to try"):
        plan_compare(_catalog("2.13.0"), ["recompile_limit"], False, ["py"])


def test_two_pythons_compare_environments():
    plan = plan_compare(_catalog("2.13.0"), [], False, ["/a/python", "/b/python"])
    assert plan.baseline.python == "/a/python" and [v.python for v in plan.variants] == ["/b/python"]


def test_without_a_flag_the_plan_is_the_baseline_alone_until_its_causes_are_known():
    """compare without --flag runs the baseline first; the flips come from its causes (guarddiag.flips)."""
    plan = plan_compare(_catalog("2.13.0"), [], False, ["py"])
    assert plan.baseline.flags == () and plan.variants == ()
    with pytest.raises(InputError, match="--combined runs the --flag flips together"):
        plan_compare(_catalog("2.13.0"), [], True, ["py"])


def test_counts_that_vary_between_repeats_are_flagged():
    from guarddiag.compare import unstable_functions
    from guarddiag.model import Run
    from guarddiag.pipeline import build_from_lines
    from guarddiag.render.compare import unstable_sentence
    from tests.conftest import LOGS

    def run_of(path):
        functions, stats = build_from_lines((LOGS / path).read_text().splitlines(), roles=lambda *_: {})
        return Run(functions=functions, parse=stats)

    same = run_of("torch-2.4.1/fresh_module_instance.log")
    assert unstable_functions((same, same)) == ()
    (unstable,) = unstable_functions((same, run_of("torch-2.4.1/fresh_module_instance.inline1.log")))
    assert (unstable.function.name, unstable.compiles) == ("forward", (1, 12))
    assert unstable_sentence(unstable).startswith("forward (scenarios/fresh_module_instance.py:32) compiled [1, 12] times")




def test_a_flag_newer_than_the_target_torch_is_refused_with_its_old_name():
    """--python pointing at torch 2.4.1 (its real catalog): recompile_limit did not exist yet."""
    with pytest.raises(InputError, match=r"unknown config flag 'recompile_limit' in torch 2\.4\.1.*did you mean: cache_size_limit"):
        _catalog("2.4.1").resolve("recompile_limit")
    assert _catalog("2.13.0").resolve("recompile_limit").value == 8


# --- the child's checks on a flag value (guarddiag/child/_torchflags.py, run in torch 2.13's interpreter here) ---


def test_literal_annotations_give_a_flags_choices():
    from typing import Literal, Optional

    from guarddiag.child._torchflags import _choices

    assert _choices(Literal["dynamic", "unbacked"]) == (["dynamic", "unbacked"], True)
    assert _choices(Optional[Literal["a", "b"]]) == (["a", "b", None], True)
    assert _choices(Literal["a", "b"] | None) == (["a", "b", None], True)
    assert _choices(bool | Literal["ddp_optimizer", "python_reducer"]) == (["ddp_optimizer", "python_reducer"], False)
    assert _choices(str) == ([], False)
    assert _choices(Optional[int]) == ([], False)
    assert _choices(None) == ([], False)


@pytest.mark.parametrize("version", ["2.13.0", "2.15.0"])
def test_choices_come_from_torchs_annotations(version):
    cat = _catalog(version)
    mark_as = cat.resolve("automatic_dynamic_shapes_mark_as")
    assert mark_as.choices_only and "unbacked" in mark_as.choices
    assert parse_value(mark_as, "unbacked") == "unbacked"
    with pytest.raises(InputError, match=r"takes one of 'dynamic', 'unbacked'.*, not 'bogus'"):
        parse_value(mark_as, "bogus")
    # choices of a flag inside a nested config class (torch's entry knows its type), ints included
    mk = cat.resolve("inductor.triton.multi_kernel")
    assert mk.choices_only and mk.choices == (0, 1, 2, 3)
    assert parse_value(mk, "2") == 2
    with pytest.raises(InputError, match=r"takes one of 0, 1, 2, 3, not '7'"):
        parse_value(mk, "7")
    ddp = cat.resolve("optimize_ddp")
    assert ddp.type == "bool" and not ddp.choices_only
    assert parse_value(ddp, "python_reducer") == "python_reducer"
    assert parse_value(ddp, "false") is False
    with pytest.raises(InputError, match="takes a boolean"):
        parse_value(ddp, "sometimes")




def test_compare_tries_every_other_choice_of_a_literal_flag():
    plan = plan_compare(_catalog("2.13.0"), ["automatic_dynamic_shapes_mark_as"], False, ["py"])
    assert [v.label for v in plan.variants] == ["automatic_dynamic_shapes_mark_as=unbacked"]


def test_the_same_flag_given_twice_is_one_configuration():
    plan = plan_compare(
        _catalog("2.13.0"),
        ["specialize_float", "specialize_float", "recompile_limit=4,16", "recompile_limit=16", "inline_inbuilt_nn_modules",
         "inline_inbuilt_nn_modules"],
        False,
        ["py"],
    )
    assert [v.label for v in plan.variants] == ["specialize_float=true", "recompile_limit=4", "recompile_limit=16"]
    assert len(plan.no_ops) == 1


def test_flags_table_hides_internal_names_wraps_notes_and_shows_values_as_they_are():
    from guarddiag.commands.flags import select_flags
    from guarddiag.render.flags import render_flags

    def flags_table(catalog, pattern, show_all, fmt):
        return render_flags(select_flags(catalog, pattern, show_all), fmt)

    catalog = _catalog("2.13.0")
    table = flags_table(catalog, None, False, "table")
    names = {line.split()[0] for line in table.splitlines()[3:] if line and not line.startswith(" ")}
    assert not {"TYPE_CHECKING", "base_dir"} & names and not any(n.startswith("_") for n in names)
    assert max(len(line) for line in table.splitlines()) <= 140
    (row,) = [line for line in flags_table(catalog, "fail_on_recompile_limit_hit", False, "table").splitlines()
              if line.startswith("fail_on_recompile_limit_hit ")]
    assert row.split()[1:3] == ["bool", repr(catalog.flags["fail_on_recompile_limit_hit"].value)]
    every = flags_table(catalog, None, True, "table")
    assert "TYPE_CHECKING" in every and "base_dir" in every


# --- flags of torch.compiler.config (compiler.NAME) and torch.fx.experimental._config (fx.NAME) ---


def test_every_config_module_is_in_the_catalog_under_its_prefix():
    cat = _catalog("2.13.0")
    assert cat.resolve("fx.backed_size_oblivious").type == "bool"
    assert cat.resolve("compiler.dynamic_sources").env == ("TORCH_COMPILE_DYNAMIC_SOURCES",)
    # torch.compiler.config re-exports some dynamo flags as aliases: they set the dynamo flag.
    alias = cat.resolve("compiler.recompile_limit")
    assert alias.alias_of == "recompile_limit" and cat.target(alias).name == "recompile_limit"
    # An inductor alias names its inductor target (the catalog name, prefix included).
    inductor_alias = next(f for f in cat.flags.values() if f.name.startswith("inductor.") and f.alias_of)
    assert cat.target(inductor_alias).name.startswith("inductor.")


def test_a_flag_given_without_its_modules_prefix_suggests_the_prefixed_name_first():
    cat = _catalog("2.13.0")
    with pytest.raises(InputError, match=r"unknown config flag 'dynamic_sources'.*did you mean: compiler\.dynamic_sources"):
        cat.resolve("dynamic_sources")
    with pytest.raises(InputError, match=r"did you mean: fx\.backed_size_oblivious"):
        cat.resolve("backed_size_oblivious")
    with pytest.raises(InputError, match=r"did you mean: fx\.backed_size_oblivious"):
        cat.resolve("fx.backed_size_obliviuos")
    with pytest.raises(InputError, match=r"did you mean: recompile_limit"):
        cat.resolve("fx.recompile_limit")


def test_flags_lists_the_compiler_and_fx_modules_without_all():
    from guarddiag.commands.flags import select_flags

    shown = {f.name for f in select_flags(_catalog("2.13.0"), None, False).flags}
    assert {"fx.backed_size_oblivious", "compiler.dynamic_sources", "compiler.unbacked_sources"} <= shown
    assert not any(n.startswith("inductor.") for n in shown)


def test_the_child_finds_each_flags_config_module_by_its_prefix():
    from guarddiag.child._torchflags import _split_name, catalog_name

    assert _split_name("fx.backed_size_oblivious") == ("torch.fx.experimental._config", "backed_size_oblivious", "fx.")
    assert _split_name("compiler.dynamic_sources") == ("torch.compiler.config", "dynamic_sources", "compiler.")
    assert _split_name("dynamo.recompile_limit") == ("torch._dynamo.config", "recompile_limit", "dynamo.")
    assert _split_name("recompile_limit") == ("torch._dynamo.config", "recompile_limit", "")
    assert catalog_name("torch._inductor.config.max_autotune") == "inductor.max_autotune"
    assert catalog_name("torch._dynamo.config.recompile_limit") == "recompile_limit"
    assert catalog_name("torch.elsewhere.config.x") == "torch.elsewhere.config.x"


@pytest.mark.parametrize(
    "word",
    ["compiler.dynamic_sources=L['ids']:1", "L['x'];rm -rf ~", "$(touch /tmp/x)'", "a'b\\c", "it's !x", "plain"],
)
def test_a_word_guarddiag_tells_users_to_paste_is_that_one_word_in_a_shell(word: str):
    """The compare commands and --flag arguments of hints are built from source names: quoted, each is one word
    whatever it holds (a POSIX shell splits and expands it as shlex does; controls: tests/unit/render/test_escape.py),
    and a source's own quotes stay readable."""
    import shlex

    from guarddiag.shell import quote

    assert shlex.split(quote(word)) == [word]
    if word.startswith("compiler."):
        assert quote(word) == "\"compiler.dynamic_sources=L['ids']:1\""


def test_a_misspelt_flag_is_suggested_once_not_once_per_alias():
    """torch.compiler.config re-exports dynamo's flags as aliases (compiler.allow_unspec_int_on_nn_module): a
    suggestion names each flag once, the first name found (the CI run of #25 caught the alias listed beside it)."""
    with pytest.raises(InputError) as caught:
        _catalog("2.13.0").resolve("allow_unspec_int_on_nn_modul")
    assert "(did you mean: allow_unspec_int_on_nn_module?)" in str(caught.value)
