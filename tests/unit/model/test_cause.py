"""A cause holds facts (its kind's row, the guarded object, the property, the dim) and torch's own text,
never words; its key is what makes two causes one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from guarddiag.causes import cause_from_changed_guard, classify_failure, guarded_source, keys_cause
from guarddiag.guardkinds import kind
from guarddiag.ids import CompileId
from guarddiag.model import Cause, DictKeys, Guard, Inferred, Source
from guarddiag.sourceinfo import Roles
from guarddiag.wrapped import renamed_cause, renamed_source


def test_a_tensor_failure_is_its_kind_object_property_and_dim():
    text = "tensor 'x' size mismatch at index 0. expected 32, actual 20"
    cause = classify_failure(text, CompileId("0", 0), {"x": "argument"})
    assert (cause.kind, cause.category, cause.guarded, cause.checked, cause.dim) == (
        "TENSOR_MATCH",
        "tensor",
        Source("x", "argument"),
        "size",
        0,
    )
    assert cause.text == text and cause.known and not cause.reset and cause.inferred is None
    assert kind(cause.kind).hint == "tensor"


def test_a_value_on_an_attribute_keeps_root_role_and_path():
    cause = classify_failure("self.layer_idx == 0  # x = x * self.layer_idx  # model.py:7 in forward", None, {"self": "argument"})
    assert (cause.kind, cause.guarded) == ("EQUALS_MATCH", Source("self", "argument", ".layer_idx"))
    assert cause.text == "self.layer_idx == 0 # x = x * self.layer_idx # model.py:7 in forward"
    assert cause.location == "model.py:7 in forward"


def test_global_state_names_the_state_it_checked_and_no_object():
    cause = classify_failure("GLOBAL_STATE changed: grad_mode")
    assert (cause.kind, cause.category, cause.guarded, cause.checked) == ("GLOBAL_STATE", "global_state", None, "grad mode")


def test_aliasing_names_the_objects_found_aliased():
    cause = classify_failure('Duplicate tensors found: ["L[\'self\'].a.weight", "L[\'self\'].b.weight"]')
    assert (cause.kind, cause.aliased) == ("NO_TENSOR_ALIASING", ("self.a.weight", "self.b.weight"))


def test_a_symbolic_size_guard_checks_its_condition():
    cause = classify_failure("2 <= x.size()[0]")
    assert (cause.kind, cause.category, cause.checked, cause.condition, cause.shape) == (
        "SHAPE_ENV",
        "dynamic_shape",
        "2 <= x.size(0)",
        "2 <= x.size(0)",
        "size_0_1",
    )


@pytest.mark.parametrize(
    ("src", "roles", "expected"),
    [
        ("", None, Source()),
        ("L['n']", {"n": "closure variable"}, Source("n", "closure")),
        ("L['m'].w[0]", None, Source("m", "local", ".w[0]")),
        ("G['FLAG']", None, Source("FLAG", "global")),
        ("G['__import___main__'].activations", None, Source("activations", "module_global", module="__main__")),
        ("G['__import_numpy']", None, Source("numpy", "module")),
        ("G['__import_torch_dot_nn'].functional", None, Source("__import_torch_dot_nn.functional", "torch")),
        (
            "L['___stack0'].shape",
            Roles(held=("self.block(x)",), line=19),
            Source("___stack0", "stack", ".shape", held="self.block(x)", line=19),
        ),
        ("L['___stack1']", Roles(held=("a",), line=19), Source("___stack1", "stack", line=19)),
    ],
)
def test_torch_names_of_objects_read_as_sources(src, roles, expected):
    assert guarded_source(src, roles) == expected


def test_a_source_refuses_a_role_it_does_not_know():
    with pytest.raises(ValueError, match="source role 'parameter'"):
        Source("x", "parameter")


def test_the_key_is_the_cause_not_where_or_how_torch_said_it():
    a = classify_failure("tensor 'x' size mismatch at index 0. expected 32, actual 20  # y = x @ w  # m.py:3 in f", CompileId("0", 0))
    b = classify_failure("tensor 'x' size mismatch at index 0. expected 20, actual 48", CompileId("0", 1))
    assert a.key == b.key and len({a.key, b.key}) == 1
    other_dim = classify_failure("tensor 'x' size mismatch at index 1. expected 8, actual 9")
    assert other_dim.key != a.key
    assert replace(a, guarded=Source("x", "argument")).key != a.key


def test_an_inferred_cause_keeps_the_two_expressions_not_a_sentence():
    before, after = Guard("GLOBAL_STATE", "", "___check_global_state() against {\"grad_mode\": true}"), Guard(
        "GLOBAL_STATE", "", "___check_global_state() against {\"grad_mode\": false}"
    )
    cause = cause_from_changed_guard(before, after)
    assert (cause.text, cause.checked, cause.inferred) == ("", "grad mode", Inferred(before.expr, after.expr, "GLOBAL_STATE"))


def test_a_length_guard_on_a_dict_becomes_a_change_of_its_keys():
    roles = {"d": "argument"}
    cause = keys_cause(classify_failure("len(L['d']) == 2", None, roles), DictKeys(("'a'",), ("'a'", "'b'")), roles)
    assert (cause.kind, cause.guarded, cause.keys) == ("DICT_KEYS", Source("d", "argument"), DictKeys(("'a'",), ("'a'", "'b'")))


def test_renaming_a_wrapped_argument_changes_the_root_not_words():
    params = {0: "params", 2: "lr"}
    assert renamed_source(Source("args", "argument", "[2]"), params) == Source("lr", "argument")
    assert renamed_source(Source("args", "local", "[0][1].grad"), params) == Source("params", "argument", "[1].grad")
    assert renamed_source(Source("args", "argument", "[5]"), params) == Source("args", "argument", "[5]")
    assert renamed_source(Source("kwargs", "argument", "[2]"), params) == Source("kwargs", "argument", "[2]")
    cause = Cause("value", "L['args'][2]", "", "", "EQUALS_MATCH", Source("args", "argument", "[2]"))
    assert renamed_cause(cause, params).guarded == Source("lr", "argument")
