"""explain's words hold the model's hint (no copy of its lines and choices); its JSON document is built from
both by explanation_data / hint_data, with the keys and order it always had."""

from __future__ import annotations

import json

from guarddiag.commands.explain import explain_lines
from guarddiag.render.explain import render_explanation
from guarddiag.render.explain_hints import choice_text, line_where
from guarddiag.render.explain_words import explanation_data, explanation_words, hint_data, hint_details
from tests.conftest import LOGS, in_checkout

HINT_KEYS = ["cause", "count", "hint", "check", "kind", "id", "subject", "lines", "choices", "unknown", "cannot_tell", "verified"]
LINE_KEYS = ["code", "where", "place", "function", "target", "at", "setting", "value"]


def _words(log: str):
    with (LOGS / "torch-2.13.0" / f"{log}.log").open(encoding="utf-8") as fh:
        facts = explain_lines(map(in_checkout, fh))
    return facts, explanation_words(facts)


def test_a_hint_in_words_is_the_models_hint_said():
    facts, words = _words("tensor_shape")
    hints = [(f, h) for f in words.functions for h in f.hints]
    assert hints
    for f, h in hints:
        assert h.fact in next(x.hints for x in facts.functions if x.name == f.name) and h.function == f.name


def test_the_json_of_a_hint_has_its_keys_in_order_with_each_line_placed_in_words():
    facts, words = _words("tensor_shape")
    document = json.loads(render_explanation(facts, "json"))
    assert document == json.loads(json.dumps(explanation_data(words)))
    for f in words.functions:
        for h in f.hints:
            data = hint_data(h)
            assert list(data) == HINT_KEYS
            for line, fact in zip(data["lines"], h.fact.lines, strict=True):
                assert list(line) == LINE_KEYS and line["place"] == line_where(fact, f.name)
            for choice, fact in zip(data["choices"], h.fact.choices, strict=True):
                assert (choice["id"], choice["hint"]) == (fact.hint, choice_text(fact, h.fact))


def test_the_text_says_each_line_where_it_goes():
    _, words = _words("tensor_shape")
    h = next(h for f in words.functions for h in f.hints if h.fact.lines)
    details = hint_details(h)
    assert details[0] == f"    {line_where(h.fact.lines[0], h.function)}: {h.fact.lines[0].code}"
