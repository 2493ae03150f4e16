"""A hint carries facts (the objects found aliased, the ambient state checked); render/explain_hints says them."""

from __future__ import annotations

from dataclasses import replace

from guarddiag.commands.explain import explain_lines
from guarddiag.explain.model import FixHint
from guarddiag.render.explain_hints import hint_subject, hint_text
from tests.conftest import LOGS


def _hints(log: str) -> list[FixHint]:
    text = (LOGS / "torch-2.13.0" / log).read_text(encoding="utf-8")
    return [h for f in explain_lines(text.splitlines()).functions for h in f.hints]


def test_an_aliasing_hint_holds_the_aliased_names_not_a_phrase():
    (hint,) = [h for h in _hints("tensor_aliasing.log") if h.hint == "one_tensor_twice"]
    assert (hint.aliased, hint.subject) == (("feats[1]", "feats[2]"), "")
    assert hint_subject(hint) == "`feats[1]` and `feats[2]`"
    assert hint_text(hint).startswith("`feats[1]` and `feats[2]` were one tensor in one call")


def test_an_aliasing_hint_without_names_speaks_of_tensor_inputs():
    (hint,) = [h for h in _hints("tensor_aliasing.log") if h.hint == "one_tensor_twice"]
    assert hint_subject(replace(hint, aliased=())) == "tensor inputs"


def test_an_ambient_hint_holds_the_state_its_guard_checks():
    (hint,) = [h for h in _hints("grad_mode.log") if h.hint.startswith("ambient")]
    assert hint.subject == hint.causes[0].checked == "grad mode"
    assert "one entry per grad mode setting" in hint_text(hint)
