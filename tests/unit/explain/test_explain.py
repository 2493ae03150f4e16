"""The guard model (``guarddiag explain``) on real logs recorded from torch 2.15.0, 2.13.0, 2.4.1 and 2.1.2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from guarddiag.commands.explain import explain_lines, explain_target
from guarddiag.errors import InputError
from guarddiag.explain import Explanation, read_guard, user_name
from guarddiag.model import Guard
from guarddiag.render.explain import render_explanation
from guarddiag.render.explain_words import ExplanationWords, FunctionWords, ObjectWords, explanation_words
from guarddiag.render.words import cause_subject
from guarddiag.report import run_report, save_report
from tests.conftest import LOGS, ROOT, in_checkout

VERSIONS = ("2.15.0", "2.13.0", "2.4.1", "2.1.2")
# Type-checked modules, inlined nn.Module: what 2.13 prints, 2.15 prints the same way.
MODERN = ("2.13.0", "2.15.0")
SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.py"))


def _facts(version: str, scenario: str, full: bool = False) -> Explanation:
    with (LOGS / f"torch-{version}" / f"{scenario}.log").open(encoding="utf-8") as fh:
        return explain_lines(map(in_checkout, fh), full=full)


def _explain(version: str, scenario: str, full: bool = False) -> ExplanationWords:
    """The guard model as the user reads it (every format shows these words)."""
    return explanation_words(_facts(version, scenario, full))


def _function(e: ExplanationWords, name: str) -> FunctionWords:
    (f,) = [f for f in e.functions if f.name == name]
    return f


def _row(f: FunctionWords, name: str, entry: int = 0) -> ObjectWords:
    rows = [o for o in f.entries[entry].objects if o.name == name or o.name.startswith(name + " (")]
    assert len(rows) == 1, [o.name for o in f.entries[entry].objects]
    return rows[0]


def _says(sentences: tuple[str, ...], *words: str) -> bool:
    return any(all(w in s for w in words) for s in sentences)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_recorded_log_explains_every_compile(version: str, scenario: str):
    facts = _facts(version, scenario)
    e = explanation_words(facts)
    assert e.functions
    for f in e.functions:
        assert len(f.entries) == f.compiles, f.label  # one guard model per cache entry
        for entry in f.entries:
            assert entry.objects or entry.ambient
            for o in entry.objects:
                assert not re.search(r"(?<![\w])[LG]\['", o.name), o.name  # user terms, not torch sources
                assert o.recompiles or o.no_recompile, o.name
    text = render_explanation(facts, "table")
    assert "Python shape guard function" not in text and "___check" not in text


@pytest.mark.parametrize("version", MODERN)
def test_module_int_attribute_2_13_type_of_self_and_value_of_layer_idx(version):
    f = _function(_explain(version, "module_int_attribute"), "forward")
    me = _row(f, "argument `self`")
    assert me.how == "type" and _says(me.no_recompile, "another DecoderLayer instance", "no recompile")
    idx = _row(f, "`self.layer_idx`")
    assert idx.how == "value" and idx.detail == "value 0"
    assert _says(idx.recompiles, "changing `self.layer_idx` recompiles", "value 0 is baked in")
    assert [d for e in f.entries[1:] for d in e.differs] == [f"`self.layer_idx`: value {i}" for i in range(1, 6)]
    (hint,) = f.hints
    assert "allow_unspec_int_on_nn_module" in hint.hint and hint.fact.count == 5
    assert hint.check == "guarddiag compare SCRIPT --flag allow_unspec_int_on_nn_module"


def test_module_int_attribute_2_4_1_identity_of_self_then_dynamic_int():
    e = _explain("2.4.1", "module_int_attribute")
    assert e.era == "id-modules"
    f = _function(e, "forward")
    me = _row(f, "argument `self`")
    assert me.how == "identity" and _says(me.recompiles, "another object as argument `self` recompiles", "id()")
    assert _row(f, "`self.layer_idx`").how == "value"
    # after three values torch 2.4 makes the int dynamic (automatic dynamic), self stays pinned by id
    assert _row(f, "`self.layer_idx`", entry=3).how == "type (dynamic value)"
    (hint,) = f.hints
    assert "inline_inbuilt_nn_modules = True" in hint.hint and "allow_unspec_int_on_nn_module" not in hint.hint


def test_fresh_module_instance_recompiles_on_2_4_1_but_not_on_2_13():
    old = _function(_explain("2.4.1", "fresh_module_instance"), "forward")
    assert _row(old, "argument `self`").how == "identity"
    assert all("argument `self`: another object (id)" in e.differs for e in old.entries[1:])
    assert "inline_inbuilt_nn_modules" in old.hints[0].hint
    new = _function(_explain("2.13.0", "fresh_module_instance"), "forward")
    assert new.compiles == 1 and not new.hints
    me = _row(new, "argument `self`")
    assert me.how == "type" and _says(me.no_recompile, "another Block instance", "no recompile, only its type is checked")
    family = _row(new, "6 parameters under `self`")
    assert family.count == 6 and family.detail == "tensor metadata each, all static shapes"


def test_torch_2_1_has_no_inline_flag_so_the_hint_says_reuse_or_upgrade():
    e = _explain("2.1.2", "fresh_module_instance")
    assert e.era == "id-modules-old"
    (hint,) = _function(e, "forward").hints
    assert "reuse one `self` instance" in hint.hint and "inline_inbuilt_nn_modules" not in hint.hint and not hint.check


@pytest.mark.parametrize("version", MODERN)
def test_dict_keys_iterated_dict_by_keys_read_dict_only_at_its_keys(version):
    f = _function(_explain(version, "dict_keys"), "weighted_total")
    losses = _row(f, "argument `losses`")
    assert losses.how == "content (keys in order)" and losses.detail == "keys 'main'"
    assert _says(losses.recompiles, "adding, removing or reordering keys of `losses` recompiles")
    weights = _row(f, "global `LOSS_WEIGHTS`")
    assert _says(weights.no_recompile, "adding keys to `LOSS_WEIGHTS`: no recompile", "only read at key 'main'")
    assert _row(f, "`LOSS_WEIGHTS['main']`").detail == "value 1.0"
    # torch 2.4.1 checks the length of a dict it reads by key: adding keys there does recompile
    old = _row(_function(_explain("2.4.1", "dict_keys"), "weighted_total"), "global `LOSS_WEIGHTS`")
    assert old.how == "content (length)" and _says(old.recompiles, "adding or removing keys of `LOSS_WEIGHTS` recompiles")


@pytest.mark.parametrize("version", MODERN)
def test_dict_value_and_global_and_closure_and_class_attribute_values(version):
    f = _function(_explain(version, "dict_value"), "mlp_forward")
    assert _says(_row(f, "argument `cfg`").no_recompile, "only read at key 'activation', 'use_residual'")
    assert _says(_row(f, "`cfg['activation']`").recompiles, "changing `cfg['activation']` recompiles", "'gelu'")
    g = _function(_explain(version, "global_variable"), "augment_and_encode")
    assert _row(g, "global `AUGMENT_MODE`").detail == "value 'none'"
    c = _function(_explain(version, "closure_variable"), "hinge_loss")
    assert _row(c, "closure variable `reduction`").detail == "value 'mean'"
    assert _row(c, "closure variable `margin`").detail == "value 1"
    k = _function(_explain(version, "class_attribute"), "normalize_features")
    assert _row(k, "`Cfg.norm_type`").how == "value"


def test_class_attribute_on_2_4_1_is_not_guarded():
    """torch 2.4.1 checks only id(Cfg): a changed class attribute silently reuses the stale graph (scenarios/README.md)."""
    f = _function(_explain("2.4.1", "class_attribute"), "normalize_features")
    cfg = _row(f, "global `Cfg`")
    assert cfg.how == "identity" and _says(cfg.no_recompile, "changing an attribute of `Cfg` that is not listed here: no recompile")
    assert not [o for o in f.entries[0].objects if "norm_type" in o.name]


@pytest.mark.parametrize("version", MODERN)
def test_tensor_shape_dynamic_dim_and_its_range_fold_into_the_tensor(version):
    f = _function(_explain(version, "tensor_shape"), "train_step")
    assert _row(f, "argument `x`").detail == "tensor float32 [32, 20] requires_grad=False"
    dyn = _row(f, "argument `x`", entry=1)
    assert dyn.how == "tensor metadata (dynamic dims)"
    assert dyn.detail.endswith("; dynamic dim 0 (size guards: `2 <= x.size(0)`, `y.size(0) == x.size(0)`)")
    # Another size of `x` alone breaks the relation with `y`: "no recompile" only where every guard holds (#25).
    assert _says(dyn.no_recompile, "another size of `x` at dim 0 that keeps `2 <= x.size(0)` and `y.size(0) == x.size(0)`: no recompile")
    assert not _says(dyn.no_recompile, "another size of `x` at dim 0: no recompile")
    assert _says(dyn.recompiles, "another size of `x` at dim 1 recompiles")
    assert _says(_row(f, "argument `y`", entry=1).recompiles, "breaking `y.size(0) == x.size(0)` recompiles")
    assert not [o for e in f.entries for o in e.objects if "size()" in o.name]
    assert any("mark_dynamic" in h.hint for h in f.hints)


@pytest.mark.parametrize("version", MODERN)
def test_float_hyperparameter_becomes_dynamic_and_the_hint_is_a_tensor(version):
    f = _function(_explain(version, "float_hyperparameter"), "sgd_update")
    assert _row(f, "argument `lr`").detail == "value 0.1"
    assert _row(f, "argument `lr`", entry=1).how == "type (dynamic value)"
    (hint,) = f.hints
    assert "torch.tensor(value)" in hint.hint


@pytest.mark.parametrize("version", MODERN)
def test_grad_mode_is_ambient_and_differs_between_entries(version):
    f = _function(_explain(version, "grad_mode"), "compute_loss")
    assert "grad mode on" in f.entries[0].ambient
    assert f.entries[1].differs == ("ambient: grad mode off",)
    assert not [o for o in f.entries[0].objects if "__import" in o.name or "hooks" in o.name]


@pytest.mark.parametrize("version", MODERN)
def test_full_expands_families_and_default_collapses_them(version):
    short = _function(_explain(version, "fresh_module_instance"), "forward")
    full = _function(_explain(version, "fresh_module_instance", full=True), "forward")
    assert len(full.entries[0].objects) > len(short.entries[0].objects)
    assert _row(full, "`self.fc1.weight`").how == "tensor metadata"


@pytest.mark.parametrize(
    ("expr", "how", "source"),
    [
        ("___check_obj_id(L['m'], 140)", "identity", "L['m']"),
        ("___check_type_id(L['m'], 94), type=<class '__main__.Block'>", "type", "L['m']"),
        ("list(dict.keys(L['d']))[0] == 'a'", "key", "L['d']"),
        ("list(L['d'].keys())[1] == 'b'", "key", "L['d']"),
        ("set(L['d'].keys()) == {'a'}", "keys", "L['d']"),
        ("len(G['xs']) == 3", "length", "G['xs']"),
        ("G['FLAG'] == True", "value", "G['FLAG']"),
        ("2 <= L['x'].size()[0]", "shape", "L['x']"),
        ("-9223372036854775808 <= L['self'].layer_idx", "dynamic_scalar", "L['self'].layer_idx"),
        ("not math.isnan(L['lr'])", "dynamic_scalar", "L['lr']"),
        ("hasattr(L['x'], '_dynamo_dynamic_indices') == False", "marking", "L['x']"),
    ],
)
def test_read_guard_shapes(expr: str, how: str, source: str):
    fact = read_guard(Guard("LAMBDA_GUARD", "", expr))
    assert fact is not None and (fact.how, fact.source) == (how, source)


def test_guard_function_source_lines_and_aliases_are_not_facts():
    for expr in ("def guard(L):", "return False", "_var1 = _var0.F", "if not (_var1 is G['F']):", "G['F'] is G['__import_x'].F"):
        assert read_guard(Guard("LAMBDA_GUARD", "", expr)) is None


def test_user_names():
    assert user_name("L['m']._modules['lin']._parameters['weight']") == "m.lin.weight"
    assert user_name("G['__builtins_dict___3']['iter']") == "iter"
    assert user_name("G['F'].layer_norm.__code__") == "F.layer_norm"


@pytest.mark.parametrize("fmt", ["json", "yaml", "markdown", "table"])
def test_formats(fmt: str):
    log = LOGS / "torch-2.13.0" / "module_int_attribute.log"
    text = explain_target(str(log), fmt, False)
    if fmt == "json":
        data = json.loads(text)
        assert data["schema"] == "guarddiag.explain/1" and data["functions"][0]["name"] == "forward"
    elif fmt == "yaml":
        assert yaml.safe_load(text)["functions"][0]["compiles"] == 6
    elif fmt == "markdown":
        assert "| object" in text and "`self.layer_idx`" in text
    else:
        assert "changing `self.layer_idx` recompiles" in text


def test_run_record_is_explained_through_its_log(tmp_path: Path):
    from guarddiag.pipeline import parse_log

    run = parse_log(str(LOGS / "torch-2.13.0" / "dict_keys.log"))
    save_report(run_report(run), tmp_path / "run.json")
    assert "adding, removing or reordering keys of `losses`" in explain_target(str(tmp_path / "run.json"), "table", False)


@pytest.mark.parametrize(
    ("target", "message"),
    [("missing.log", "no such file"), ("README.md", "no compiled function"), ("tests", "is a directory")],
)
def test_bad_targets_are_one_line_input_errors(target: str, message: str):
    with pytest.raises(InputError, match=message):
        explain_target(target, "table", False)


def test_unknown_format_is_refused():
    with pytest.raises(InputError, match="unknown format"):
        explain_target(str(LOGS / "torch-2.13.0" / "grad_mode.log"), "html", False)


def test_bool_attribute_checked_by_id_on_2_4_1_is_a_value():
    f = _function(_explain("2.4.1", "module_bool_attribute"), "forward")
    flag = _row(f, "`self.use_label_noise`")
    assert flag.how == "value" and _says(flag.recompiles, "changing `self.use_label_noise` recompiles")


def test_guard_model_doc_is_generated_from_the_scenarios():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "tools/gen_guard_model.py", "--recorded", "--check"], cwd=LOGS.parent.parent.parent, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_compiles_that_installed_no_code_are_not_called_cache_entries():
    """A frame Dynamo skipped (no tensor op) and a compile that raised leave no cache entry behind."""
    text = explain_target(str(LOGS / "torch-2.13.0" / "reset_and_failures.log"), "table", False)
    assert "noop (counting/reset_and_failures.py:13): 1 compile, 1 of them installed no code (failed or skipped)" in text
    assert "strict (counting/reset_and_failures.py:18): 1 compile, 1 of them installed no code" in text
    assert "no cache entry: every compile of it installed no code" in text
    assert "capture it with TORCH_LOGS=guards" not in text


def test_the_model_carries_facts_and_the_renderer_the_words():
    """explain/ names what is checked and what to do (a hint by name, a value as read); render/ says it."""
    from guarddiag.explain.model import TypeObject, ValueObject

    (f,) = [f for f in _facts("2.13.0", "module_int_attribute").functions if f.name == "forward"]
    rows = {o.name: o for o in f.entries[0].objects if isinstance(o, ValueObject | TypeObject)}
    assert rows["self.layer_idx"] == ValueObject("self.layer_idx", "argument", "self", "value", ("L['self'].layer_idx",), "0", "0")
    assert isinstance(rows["self"], TypeObject) and rows["self"].type == "DecoderLayer"
    (hint,) = f.hints
    assert (hint.hint, hint.subject, hint.kind, hint.count) == ("allow_unspec_int_on_nn_module", "self.layer_idx", "fix", 5)
    # The cause as guarddiag.model.Cause has it (its subject is that module's to say).
    assert [(c.cause.category, c.count) for c in f.causes] == [("value", 5)] and "self.layer_idx" in cause_subject(f.causes[0].cause)


def test_a_builtin_class_the_code_uses_is_no_true_false_value():
    """`isinstance(x, bool)` in transformers' code: torch 2.13 lists the class bool as
    ``___check_obj_id(G['__builtins_dict___0']['bool'], ...), type=<class 'bool'>`` (seen in a GPT-2 generate() log)."""
    from guarddiag.explain.model import CallablesObject
    from guarddiag.explain.objects import objects_of
    from guarddiag.model import Guard

    src = "G['__builtins_dict___0']['bool']"
    guard = Guard("ID_MATCH", src, f"___check_obj_id({src}, 139643834363712), type=<class 'bool'>")
    rows, _ = objects_of([guard], {})
    (row,) = rows
    assert isinstance(row, CallablesObject) and [m.name for m in row.members] == ["bool"]
