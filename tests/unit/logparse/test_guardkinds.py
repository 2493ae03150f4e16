"""Every row of the guard-kind table (guarddiag.guardkinds) on real strings from the recorded logs.

For each kind: a flat listing line (torch < 2.3, which prints no kind) is read as that kind, and a
failure text classifies to its category. Each string is checked to be in the log it is quoted from.
A row added to the table without examples here fails ``test_every_row_has_examples``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from guarddiag.causes import cause_from_changed_guard, classify_failure
from guarddiag.guardkinds import (
    AMBIENT_KINDS,
    AMBIENT_STATES,
    BY_NAME,
    DESCRIPTIONS,
    FLAT_PATTERNS,
    KINDS,
    PINNING_KINDS,
    Category,
    ambient_state,
    as_state_change,
    category,
    kind,
)
from guarddiag.ids import CompileId
from guarddiag.logparse.framing import frame
from guarddiag.logparse.guards import TreeReader, flat_guard
from guarddiag.model import Cause, Guard
from guarddiag.render.words import cause_subject
from guarddiag.report import record_dict, run_report
from tests.conftest import LOGS

PASTED = LOGS.parent / "pasted"
# Spellings no recorded log holds, quoted from the f-strings of torch 2.13's torch/_dynamo/guards.py.
TORCH_SOURCE = "torch/_dynamo/guards.py"


def _text(where: str) -> str:
    path = PASTED / where.removeprefix("pasted/") if where.startswith("pasted/") else LOGS / where
    return Path(path).read_text(encoding="utf-8", errors="replace")


def _real(where: str, text: str) -> str:
    if where != TORCH_SOURCE:
        assert text in _text(where), f"{text!r} is not in {where}"
    return text


def _listing_line(where: str, expr: str) -> str:
    """The body of the first guard listing line of the log that holds ``expr``, comment and all
    (``LABEL: expr`` for a tree line: the expression is taken from behind the label)."""
    if where == TORCH_SOURCE:
        return expr
    for line in _text(where).splitlines():
        framed = frame(line)
        if framed is None:
            continue
        body = framed.body.strip()
        at = body.find(expr)
        if at >= 0 and (at == 0 or body[:at].endswith("+- ")):
            return body[at:].partition(": ")[2] if body[:at].endswith("+- ") else body
    raise AssertionError(f"no listing line {expr!r} in {where}")


# (kind, log, start of the listing line). Flat lines are torch < 2.3's own; a ``LABEL: expr`` is a tree
# line of a newer torch, whose expression a flat listing prints the same: the reader must agree with torch's label.
FLAT = [
    ("TENSOR_MATCH", "torch-2.1.2/tensor_shape.log", "check_tensor(L['x'], Tensor, DispatchKeySet(CPU"),
    ("TENSOR_MATCH", "torch-2.13.0/tensor_shape.log", "TENSOR_MATCH: check_tensor(L['x'], Tensor"),
    ("ID_MATCH", "torch-2.1.2/fresh_module_instance.log", "___check_obj_id(L['self'], "),
    ("ID_MATCH", "handmade/v2_5_windows_paths.log", "ID_MATCH: ___check_obj_id(L['self'], 2301442069136)"),
    ("TYPE_MATCH", "handmade/real_2_1_2_recompile_limit.log", "___check_type_id(L['n'], 140584088337632)"),
    ("TYPE_MATCH", "torch-2.13.0/dict_keys.log", "TYPE_MATCH: ___check_type_id(G['LOSS_WEIGHTS'], 140649284603552)"),
    ("DICT_VERSION", TORCH_SOURCE, "___dict_version(G['CONFIG']) == 12"),
    ("DICT_KEYS", "torch-2.1.2/dict_keys.log", "set(L['losses'].keys()) == {'aux', 'main'}"),
    ("DICT_KEYS", TORCH_SOURCE, "___key_to_id(L['losses']) == ['main', 'aux']"),
    ("DICT_CONTAINS", "torch-2.13.0/fresh_module_instance.log", "DICT_CONTAINS: not ___dict_contains('forward', L['self']._modules['fc1']"),
    ("LENGTH_CHECK", "torch-2.1.2/list_length.log", "len(L['features']) == 2"),
    ("LENGTH_CHECK", "torch-2.13.0/fresh_module_instance.log", "LENGTH_CHECK: len(L['self']._modules['norm'].normalized_shape) == 1"),
    ("TUPLE_ITERATOR_LEN", TORCH_SOURCE, "___tuple_iterator_len(L['it']) == 3"),
    ("GLOBAL_STATE", "torch-2.1.2/grad_mode.log", "___is_grad_enabled()"),
    ("GLOBAL_STATE", "torch-2.1.2/grad_mode.log", "not ___is_grad_enabled()"),
    ("GLOBAL_STATE", "torch-2.1.2/class_attribute.log", "not ___are_deterministic_algorithms_enabled()"),
    ("GLOBAL_STATE", "torch-2.1.2/class_attribute.log", "___is_torch_function_enabled()"),
    ("GLOBAL_STATE", "handmade/v2_5_windows_paths.log", "GLOBAL_STATE: ___check_global_state()"),
    ("DEFAULT_DEVICE", "torch-2.1.2/class_attribute.log", "utils_device.CURRENT_DEVICE == None"),
    ("TORCH_FUNCTION_MODE_STACK", "torch-2.13.0/class_attribute.log", "TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()"),
    ("BACKEND_MATCH", "handmade/real_2_3_1_recompile_limit.log", "___check_current_backend(140440522461840)"),
    ("DYNAMIC_INDICES", "torch-2.1.2/tensor_shape.log", "hasattr(L['x'], '_dynamo_dynamic_indices') == False"),
    ("SHAPE_ENV", "torch-2.1.2/tensor_shape.log", "2 <= L['x'].size()[0]"),
    ("EQUALS_MATCH", "torch-2.1.2/recompile_limit.log", "L['horizon'] == 1"),
    ("EQUALS_MATCH", "handmade/v2_5_windows_paths.log", "EQUALS_MATCH: L['seqlen'] == 77"),
    (
        "LAMBDA_GUARD",
        "torch-2.13.0/class_attribute.log",
        "LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None",
    ),
]

# (kind, log, failure text as torch printed it). Failure texts carry no kind: the row whose spelling
# matches first decides the category.
FAILURES = [
    ("TENSOR_MATCH", "torch-2.13.0/tensor_shape.log", "tensor 'x' size mismatch at index 0. expected 32, actual 20", "tensor"),
    ("TENSOR_MATCH", "torch-2.1.2/tensor_dtype.log", "tensor 'L['k']' dtype mismatch. expected Float, actual BFloat16", "tensor"),
    ("TENSOR_MATCH", "torch-2.4.1/tensor_requires_grad.log", "tensor 'L['images']' requires_grad mismatch. expected requires_grad=0", "tensor"),  # noqa: E501
    ("ID_MATCH", "torch-2.1.2/fresh_module_instance.log", "___check_obj_id(L['self'], 140424066262864)", "identity"),
    ("ID_MATCH", "torch-2.4.1/module_bool_attribute.log", "___check_obj_id(L['self'].use_label_noise, 140092520034048)", "identity"),
    ("ID_MATCH", "torch-2.13.0/wrapped_callables.log", "CodeGuardAccessor: Not a function on fn.__code__", "identity"),
    ("TYPE_MATCH", "pasted/023-pytorch-128071.txt", "___check_type_id(L['self']._modules['mixer'], 157671424)", "type"),
    ("TYPE_MATCH", "pasted/049-pytorch-167504.txt", "___check_type_id(self, 224599728)", "type"),
    ("DICT_VERSION", TORCH_SOURCE, "___dict_version(G['CONFIG']) == 12", "container"),
    ("DICT_KEYS", "torch-2.1.2/dict_keys.log", "set(L['losses'].keys()) == {'main'}", "container"),
    ("DICT_KEYS", TORCH_SOURCE, "___key_to_id(L['losses']) == ['main', 'aux']", "container"),
    (
        "DICT_CONTAINS",
        "pasted/059-torchtitan-2130.txt",
        "___dict_contains(148, self._modules['_checkpoint_wrapped_module']._modules['self_attn']._forward_pre_hooks_with_kwargs)",
        "container",
    ),
    ("LENGTH_CHECK", "torch-2.13.0/list_length.log", "len(features) == 2", "container"),
    ("LENGTH_CHECK", "torch-2.13.0/global_container.log", "not G['activations']", "container"),
    ("DICT_KEYS", "torch-2.13.0/dict_key_names.log", "list(dict.keys(weights))[0] == 'rgb'", "container"),
    ("NO_TENSOR_ALIASING", "torch-2.13.0/tensor_aliasing.log", 'Duplicate tensors found: ["feats[1]", "feats[2]"]', "aliasing"),
    ("NO_TENSOR_ALIASING", "torch-2.13.0/closure_variable.log", "check_no_aliasing(L['labels'], L['scores'])", "aliasing"),
    (
        "OBJECT_ALIASING",
        "torch-2.15.0/fresh_module_instance.log",
        "G['F'] is G['__import_torch_dot_nn_dot_modules_dot_linear'].F",
        "aliasing",
    ),
    ("LENGTH_CHECK", "torch-2.4.1/dict_keys.log", "len(L['losses']) != 1", "container"),
    ("TUPLE_ITERATOR_LEN", TORCH_SOURCE, "___tuple_iterator_len(L['it']) == 3", "container"),
    ("GLOBAL_STATE", "torch-2.13.0/grad_mode.log", "GLOBAL_STATE changed: grad_mode", "global_state"),
    ("GLOBAL_STATE", "torch-2.1.2/grad_mode.log", "___is_grad_enabled()", "global_state"),
    ("GLOBAL_STATE", "torch-2.1.2/class_attribute.log", "not ___are_deterministic_algorithms_enabled()", "global_state"),
    ("GLOBAL_STATE", "torch-2.13.0/class_attribute.log", "___check_global_state()", "global_state"),
    # A listed guard's expression stands for its failure text where no recorded log has one: torch
    # prints a failing Python guard as its expression.
    ("DEFAULT_DEVICE", "torch-2.1.2/class_attribute.log", "utils_device.CURRENT_DEVICE == None", "global_state"),
    ("TORCH_FUNCTION_MODE_STACK", "torch-2.13.0/class_attribute.log", "___check_torch_function_mode_stack()", "global_state"),
    ("BACKEND_MATCH", "handmade/real_2_3_1_recompile_limit.log", "___check_current_backend(140440522461840)", "other"),
    ("DYNAMIC_INDICES", "torch-2.1.2/tensor_shape.log", "hasattr(L['x'], '_dynamo_dynamic_indices') == False", "tensor"),
    ("SHAPE_ENV", "torch-2.13.0/tensor_shape.log", "2 <= x.size()[0]", "dynamic_shape"),
    ("SHAPE_ENV", "torch-2.1.2/tensor_shape.log", "2 <= L['x'].size()[0]", "dynamic_shape"),
    ("EQUALS_MATCH", "torch-2.13.0/recompile_limit.log", "horizon == 1", "value"),
    ("EQUALS_MATCH", "torch-2.1.2/float_hyperparameter.log", "L['lr'] == 0.05", "value"),
]

# Kinds only a guard tree (torch >= 2.3) names, with a real line, and their category: the one a cause
# inferred from a change of such a guard gets. Their expressions have no failure spelling of their own:
# a failure text classifies by the expression, to the same category but for FALLS_TO.
TREE = [
    ("NOT_NONE_MATCH", None, None, Category.IDENTITY),
    ("DICT_KEYS_MATCH", None, None, Category.CONTAINER),
    ("DICT_LENGTH", "torch-2.4.1/dict_keys.log", "DICT_LENGTH: len(G['LOSS_WEIGHTS']) == 3", Category.CONTAINER),
    ("SEQUENCE_LENGTH", None, None, Category.CONTAINER),
    ("TORCH_FUNCTION_STATE", None, None, Category.GLOBAL_STATE),
    ("GRAD_MODE", None, None, Category.GLOBAL_STATE),
    (
        "NO_TENSOR_ALIASING",
        "torch-2.13.0/closure_variable.log",
        "NO_TENSOR_ALIASING: check_no_aliasing(L['labels'], L['scores'])",
        Category.ALIASING,
    ),
    ("NO_HASATTR", "handmade/v2_5_windows_paths.log", "NO_HASATTR: hasattr(L['x'], '_dynamo_dynamic_indices') == False", Category.TENSOR),
    (
        "DIMENSION_DYNAMIC_MARKING_GUARD",
        "torch-2.13.0/class_attribute.log",
        "DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False",
        Category.TENSOR,
    ),
    ("CONSTANT_MATCH", None, None, Category.VALUE),
    ("TRUE_MATCH", "torch-2.13.0/dict_value.log", "TRUE_MATCH: L['cfg']['use_residual'] == True", Category.VALUE),
    (
        "FALSE_MATCH",
        "torch-2.13.0/graph_break.log",
        "FALSE_MATCH: L['self']._modules['encoder']._modules['1'].inplace == False",
        Category.VALUE,
    ),
    ("NONE_MATCH", None, None, Category.VALUE),
    (
        "OBJECT_ALIASING",
        "torch-2.15.0/fresh_module_instance.log",
        "OBJECT_ALIASING: G['F'] is G['__import_torch_dot_nn_dot_modules_dot_linear'].F",
        Category.ALIASING,
    ),
]
# Kinds whose listed expression, read as a failure text, gives another category than the kind's (none now:
# an ``is`` between two objects is aliasing, ``x is None`` a value).
FALLS_TO: dict[str, Category] = {}
# Kinds no recorded log lists (guard trees of torch versions not recorded here, or pinned values only
# an unannounced recompile compares): the row's category reaches a cause inferred from a changed guard.
UNRECORDED = {
    "NOT_NONE_MATCH": ("L['mask'] is not None", "L['mask'] is not None"),
    "DICT_KEYS_MATCH": ("list(L['d'].keys()) == ['a']", "list(L['d'].keys()) == ['a', 'b']"),
    "SEQUENCE_LENGTH": ("len(L['xs']) == 2", "len(L['xs']) == 3"),
    "TORCH_FUNCTION_STATE": ("___is_torch_function_enabled()", "not ___is_torch_function_enabled()"),
    "GRAD_MODE": ("___is_grad_enabled()", "not ___is_grad_enabled()"),
    "CONSTANT_MATCH": ("L['flag'] == True", "L['flag'] == False"),
    "NONE_MATCH": ("L['x'] is None", "L['x'] is None"),
}


@pytest.mark.parametrize(("name", "where", "start"), FLAT, ids=[f"{k}-{w}" for k, w, _ in FLAT])
def test_flat_listing_line_reads_as_its_kind(name: str, where: str, start: str):
    line = _listing_line(where, start)
    assert flat_guard(line).kind == name


@pytest.mark.parametrize(("name", "where", "text", "expected"), FAILURES, ids=[f"{k}-{w}" for k, w, *_ in FAILURES])
def test_failure_text_classifies_to_its_kinds_category(name: str, where: str, text: str, expected: str):
    cause = classify_failure(_real(where, text), CompileId("0", 0))
    assert cause.category == expected == BY_NAME[name].category
    assert str(cause.cache_entry) == "0/0"


@pytest.mark.parametrize(("name", "where", "line", "expected"), TREE, ids=[k for k, *_ in TREE])
def test_tree_only_kind(name: str, where: str | None, line: str | None, expected: Category):
    row = BY_NAME[name]
    if where is None:
        before, after = (Guard(name, "L['x']", expr) for expr in UNRECORDED[name])
    else:
        reader = TreeReader()
        reader.feed(f"| +- {_real(where, line)}")
        (before,) = reader.guards
        after = before
        assert kind(before.kind) is row
        assert classify_failure(before.expr).category == FALLS_TO.get(name, expected)
    assert cause_from_changed_guard(before, after).category == expected == row.category


def test_every_row_has_examples():
    tested = {k for k, *_ in FLAT} | {k for k, *_ in FAILURES} | {k for k, *_ in TREE}
    assert tested == set(BY_NAME)
    assert {k for k, w, *_ in TREE if w is None} == set(UNRECORDED)


def test_every_spelling_is_exercised():
    """Each flat and failure pattern of each row is matched by one of its examples (the ambient-state
    spellings by test_ambient_states), so a pattern added without an example fails here."""
    ambient = {s.spelling for s in AMBIENT_STATES}
    for row in KINDS:
        flat = [_listing_line(w, s) for k, w, s in FLAT if k == row.name]
        failures = [t for k, _, t, _ in FAILURES if k == row.name]
        for pattern in row.flat:
            assert any(pattern.search(x.split("  #")[0]) for x in flat), (row.name, pattern.pattern)
        for pattern in row.failure:
            assert pattern in ambient or any(pattern.search(t) for t in failures), (row.name, pattern.pattern)


# (state, where, text): every piece of global state named from a real text.
AMBIENT = [
    ("grad mode", "torch-2.13.0/grad_mode.log", "GLOBAL_STATE changed: grad_mode"),
    ("grad mode", "torch-2.1.2/grad_mode.log", "___is_grad_enabled()"),
    ("default device", "torch-2.1.2/class_attribute.log", "utils_device.CURRENT_DEVICE == None"),
    # torch's C++ GlobalStateGuard::reason() names the field; no recorded run changed autocast.
    ("autocast state", TORCH_SOURCE, "GLOBAL_STATE changed: autocast"),
    ("deterministic algorithms", "torch-2.1.2/class_attribute.log", "not ___are_deterministic_algorithms_enabled()"),
    ("torch function mode", "torch-2.1.2/class_attribute.log", "___is_torch_function_enabled()"),
    ("torch function mode", "torch-2.13.0/class_attribute.log", "___check_torch_function_mode_stack()"),
    ("global torch state", "torch-2.13.0/class_attribute.log", "___check_global_state()"),
]


@pytest.mark.parametrize(("state", "where", "text"), AMBIENT, ids=[f"{s}-{w}" for s, w, _ in AMBIENT])
def test_ambient_states(state: str, where: str, text: str):
    assert ambient_state(_real(where, text)) == state
    cause = classify_failure(text)
    assert (cause.category, cause.source, cause_subject(cause)) == ("global_state", "", state)


def test_every_ambient_state_is_named_by_an_example():
    assert {s for s, *_ in AMBIENT} == {s.name for s in AMBIENT_STATES}


def test_flat_global_state_calls_read_as_torch_2_2_words():
    """torch 2.1 guards grad mode with a call of its own, 2.13 names the field: one spelling for both."""
    assert as_state_change(_real("torch-2.1.2/grad_mode.log", "not ___is_grad_enabled()")) == "GLOBAL_STATE changed: grad_mode"
    assert as_state_change("___are_deterministic_algorithms_enabled()") == "GLOBAL_STATE changed: deterministic_algorithms"
    assert as_state_change("___is_torch_function_enabled()") == "GLOBAL_STATE changed: torch_function"
    assert as_state_change("L['x'] == 1") == "L['x'] == 1"


def test_derived_sets():
    """The sets build and explain read, as they were before the table (pinning: what an unannounced
    recompile compares between two listings)."""
    pinning = {
        "ID_MATCH", "TYPE_MATCH", "EQUALS_MATCH", "CONSTANT_MATCH", "TENSOR_MATCH", "DICT_KEYS", "DICT_KEYS_MATCH",
        "LENGTH_CHECK", "DICT_LENGTH", "SEQUENCE_LENGTH", "TUPLE_ITERATOR_LEN", "GLOBAL_STATE", "DEFAULT_DEVICE",
        "TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH",  # torch >= 2.6: bool and None checks, training flips among them
    }  # fmt: skip
    assert pinning == PINNING_KINDS
    assert AMBIENT_KINDS == {
        "GLOBAL_STATE": "global torch state",
        "DEFAULT_DEVICE": "default device",
        "TORCH_FUNCTION_MODE_STACK": "torch function mode",
        "TORCH_FUNCTION_STATE": "torch function mode",
        "GRAD_MODE": "grad mode",
        "BACKEND_MATCH": "compiler backend",
        "NO_TENSOR_ALIASING": "no aliasing between tensor inputs",
    }
    assert [k for _, k in FLAT_PATTERNS][-2:] == ["SHAPE_ENV", "EQUALS_MATCH"]  # the searches that match anywhere go last


def test_a_kind_torch_adds_later_is_other():
    assert kind("SOME_FUTURE_MATCH").category is Category.OTHER
    before, after = Guard("SOME_FUTURE_MATCH", "L['x']", "f(L['x']) == 1"), Guard("SOME_FUTURE_MATCH", "L['x']", "f(L['x']) == 2")
    assert cause_from_changed_guard(before, after).category == "other"


def test_categories_are_checked_and_stored_as_plain_strings():
    cause = Cause(category=Category.TENSOR, source="", guard="", text="")
    assert type(cause.category) is str and cause.category == "tensor"
    with pytest.raises(ValueError, match="cause category 'tensors' is not one of identity, type, value"):
        Cause(category="tensors", source="", guard="", text="")
    with pytest.raises(ValueError, match="not one of"):
        category("Identity")
    assert set(DESCRIPTIONS) == set(Category)
    assert {"identity": 1}[Category.IDENTITY] == 1  # a category finds counts kept under its string


def test_a_record_with_an_unknown_category_is_refused():
    from guarddiag.errors import InputError
    from guarddiag.store import run_from_dict
    from tests.unit.diff.test_diff import _log

    data = record_dict(run_report(_log("torch-2.13.0/module_int_attribute.log")))
    data["functions"][0]["recompile_events"][0]["causes"][0]["category"] = "vaule"
    with pytest.raises(InputError, match="cause category 'vaule' is not one of identity"):
        run_from_dict(data, "run.json")
