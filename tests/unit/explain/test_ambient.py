"""The global state an entry checks is facts (explain/facts.ambient_of); render/explain_words.ambient_words says it."""

from __future__ import annotations

import pytest

from guarddiag.explain.facts import Ambient, ambient_of
from guarddiag.model import Guard
from guarddiag.render.explain_words import ambient_words


@pytest.mark.parametrize(
    ("kind", "expr", "fact", "words"),
    [
        (
            "GLOBAL_STATE",
            'GLOBAL_STATE: ___check_global_state() against {"grad_mode":false}',
            Ambient("GLOBAL_STATE", "snapshot", False),
            "grad mode off, autocast, default dtype, deterministic algorithms",
        ),
        ("GLOBAL_STATE", "___is_grad_enabled()", Ambient("GLOBAL_STATE", "grad", True), "grad mode on"),
        ("GLOBAL_STATE", "not ___is_grad_enabled()", Ambient("GLOBAL_STATE", "grad", False), "grad mode off"),
        ("GLOBAL_STATE", "___are_deterministic_algorithms_enabled()", Ambient("GLOBAL_STATE", "deterministic"), "deterministic algorithms"),
        (
            "GLOBAL_STATE",
            "___check_global_state()",
            Ambient("GLOBAL_STATE"),
            "global torch state (grad mode, autocast, default dtype, deterministic algorithms)",
        ),
        ("DEFAULT_DEVICE", "utils_device.CURRENT_DEVICE == None", Ambient("DEFAULT_DEVICE"), "default device"),
        ("GRAD_MODE", "", Ambient("GRAD_MODE"), "grad mode"),
        (
            "TENSOR_MATCH",
            "___check_obj_id(torch._C._autograd._top_saved_tensors_hooks)",
            Ambient("SAVED_TENSOR_HOOKS"),
            "saved-tensor hooks",
        ),
    ],
)
def test_a_global_state_guard_reads_as_a_fact_and_renders_as_before(kind: str, expr: str, fact: Ambient, words: str):
    guard = Guard(kind, "", expr)
    assert ambient_of(guard) == fact
    assert ambient_words(fact) == words


def test_guards_on_torch_internals_are_facts_too():
    assert ambient_words(Ambient("MODULE_GLOBAL_HOOKS")) == "nn.Module global hooks (not each module's own hooks)"
    assert ambient_words(Ambient("TORCH_INTERNALS")) == "torch internals"
