"""render/words.py is where a cause's facts become words: its object, what it is about, what torch said."""

from __future__ import annotations

import pytest

from guarddiag.guardkinds import KINDS
from guarddiag.model import Cause, Inferred, Source
from guarddiag.render.words import UNKNOWN_SUBJECT, cause_subject, cause_text, rank_cause_words, source_words


@pytest.mark.parametrize(
    ("src", "words"),
    [
        (Source(), "the compiled frame"),
        (Source("n", "argument"), "argument `n`"),
        (Source("reduction", "closure"), "closure variable `reduction`"),
        (Source("m", "local", ".layer_idx"), "`m.layer_idx` on local `m`"),
        (Source("FLAG", "global"), "global `FLAG`"),
        (Source("activations", "module_global", module="__main__"), "global `activations` of the script"),
        (Source("ACT", "module_global", module="pkg.cfg"), "global `ACT` of module `pkg.cfg`"),
        (Source("numpy", "module"), "module `numpy`"),
        (Source("__import_torch.x", "torch"), "torch internals (`__import_torch.x`)"),
        (Source("(a + b)", "expression"), "`(a + b)`"),
        (Source("___stack0", "stack", ".shape", held="self.block(x)"), "`self.block(x).shape`"),
        (Source("___stack1", "stack", line=19), "`___stack1` (a value the graph break at line 19 left on the stack)"),
        (Source("___stack1", "stack"), "`___stack1` (a value the graph break left on the stack)"),
    ],
)
def test_a_source_in_words(src: Source, words: str):
    assert source_words(src) == words


def _cause(category: str, kind: str, guarded: Source | None = None, **facts: object) -> Cause:
    return Cause(category, "", "", "torch's text", kind, guarded, **facts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cause", "subject"),
    [
        (_cause("tensor", "TENSOR_MATCH", Source("x", "argument"), checked="size", dim=0), "size of tensor argument `x` at dim 0"),
        (_cause("value", "EQUALS_MATCH", Source("self", "argument", ".layer_idx")), "value of `self.layer_idx` on argument `self`"),
        (_cause("identity", "ID_MATCH", Source("m", "local")), "local `m`: a different object"),
        (_cause("container", "DICT_KEYS", Source("d", "argument")), "keys of argument `d`"),
        (_cause("global_state", "GLOBAL_STATE", checked="grad mode"), "grad mode"),
        (_cause("dynamic_shape", "SHAPE_ENV", checked="x.size(1) % 8 == 0"), "size guard `x.size(1) % 8 == 0`"),
        (_cause("aliasing", "NO_TENSOR_ALIASING", aliased=("a", "b")), "`a` and `b`: one tensor passed more than once"),
        (_cause("aliasing", "NO_TENSOR_ALIASING"), "tensor inputs: one tensor passed more than once"),
        (_cause("other", "BACKEND_MATCH"), "the compiler backend"),
        (_cause("other", ""), "unclassified guard"),
        (_cause("other", "", Source("x", "local")), "local `x`"),
        (_cause("other", "", known=False), UNKNOWN_SUBJECT),
        (_cause("other", "", reset=True), "compile cache reset"),
    ],
)
def test_a_cause_in_words(cause: Cause, subject: str):
    assert cause_subject(cause) == subject


def test_a_kind_without_words_is_its_object():
    """A new row of the kind table reads without a word written for it: the object it guards."""
    assert cause_subject(_cause("type", "A_KIND_TORCH_ADDS_LATER", Source("x", "argument"))) == "argument `x`"
    assert all(cause_subject(_cause(k.category.value, k.name, Source("x", "argument"), checked="size")) for k in KINDS)


def test_what_torch_said_is_its_text_or_what_changed_in_two_listings():
    assert cause_text(_cause("value", "EQUALS_MATCH")) == "torch's text"
    inferred = Cause("tensor", "L['x']", "", "", "TENSOR_MATCH", inferred=Inferred("a == 1", "a == 2", "TENSOR_MATCH"))
    assert cause_text(inferred) == "inferred: TENSOR_MATCH on x changed from `a == 1` to `a == 2`"
    keys = Cause("container", "L['d']", "", "", "DICT_KEYS", inferred=Inferred("k" * 90, "j"))
    assert cause_text(keys) == f"inferred: the keys of d changed from `{'k' * 77}...` to `j`"
    assert cause_text(_cause("other", "", known=False)).startswith("the log does not show why")
    assert cause_text(_cause("other", "", reset=True)).startswith("compiled again from scratch")


def test_a_cause_ranks_recompiled_on_and_what_else_changed():
    cause = _cause("value", "EQUALS_MATCH", Source("n", "argument"))
    assert (rank_cause_words(cause, False), rank_cause_words(cause, True)) == ("value of argument `n`", "also value of argument `n`")
