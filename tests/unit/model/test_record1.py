"""guarddiag.run/1 records (causes held words) still read: their causes become facts, their reports stay.

tests/fixtures/records/mixed_causes.run1.json was written by guarddiag before causes held facts (``guarddiag
parse`` of eleven logs of tests/fixtures/logs/torch-2.13.0 read as pieces of one log, ``--out``), with its table
and Markdown reports beside it as that guarddiag printed them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.model import SCHEMA, Cause, Inferred, Source
from guarddiag.record1 import cause2
from guarddiag.render import render
from guarddiag.report import record_dict, run_report
from guarddiag.store import load_run, run_from_dict
from tests.conftest import FIXTURES

RECORD = FIXTURES / "records" / "mixed_causes.run1.json"


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_run1_record_reads_to_the_same_report(fmt: str):
    expected = (RECORD.parent / f"mixed_causes.run1.{fmt}.expected").read_text(encoding="utf-8")
    assert render(run_report(load_run(RECORD)), fmt) + "\n" == expected


def test_every_cause_of_the_run1_record_is_known_and_its_facts_survive_a_run2_record(tmp_path: Path):
    run = load_run(RECORD)
    causes = [c for f in run.functions for e in f.recompile_events for c in (*e.causes, *e.also)]
    assert causes and all(c.known for c in causes)
    assert {c.kind for c in causes} >= {"TENSOR_MATCH", "EQUALS_MATCH", "SHAPE_ENV", "GLOBAL_STATE", "NO_TENSOR_ALIASING"}
    again = run_from_dict(json.loads(json.dumps(record_dict(run_report(run)))))
    assert again.schema == SCHEMA and again.functions == run.functions


def _run1(**cause: object) -> dict:
    return {"category": "value", "source": "", "guard": "", "text": "", "cache_entry": None, **cause}


def test_a_run1_cause_takes_the_role_its_words_kept():
    raw = _run1(source="n", guard="n == 3", text="n == 3", subject="value of argument `n`")
    assert (raw2 := cause2(raw))["guarded"] == {"root": "n", "role": "argument", "path": "", "module": "", "held": "", "line": None}
    assert raw2["kind"] == "EQUALS_MATCH" and "subject" not in raw2


def test_a_run1_cause_the_log_did_not_explain_is_not_known():
    raw = _run1(category="other", text="the log does not show why", subject="unknown")
    assert cause2(raw) == {**_run1(category="other"), "known": False}


def test_a_run1_cause_whose_words_no_reading_gives_is_kept_as_not_known():
    raw = _run1(source="n", guard="n == 3", text="n == 3", subject="value of a thing the reader never said")
    assert cause2(raw)["known"] is False


def test_a_run1_inferred_cause_keeps_its_two_expressions():
    text = "inferred: TENSOR_MATCH on x changed from `check_tensor(L['x'], Float, size=[2])` to `check_tensor(L['x'], Float, size=[3])`"
    raw = _run1(category="tensor", source="L['x']", text=text, subject="size of tensor local `x` at dim 0")
    run2 = cause2(raw)
    assert (run2["text"], run2["kind"], run2["checked"], run2["dim"]) == ("", "TENSOR_MATCH", "size", 0)
    before, after = "check_tensor(L['x'], Float, size=[2])", "check_tensor(L['x'], Float, size=[3])"
    assert run2["inferred"] == {"before": before, "after": after, "kind": "TENSOR_MATCH"}


def test_a_run2_cause_round_trips_with_its_facts():
    inferred = Inferred("a", "b", "TENSOR_MATCH")
    cause = Cause("tensor", "L['x']", "", "", "TENSOR_MATCH", Source("x", "argument"), checked="size", dim=0, inferred=inferred)
    run = load_run(RECORD)
    f = run.functions[0]
    event = replace(f.recompile_events[0], causes=(cause,), also=())
    written = replace(run, functions=(replace(f, recompile_events=(event,), limit_hits=()),))
    back = run_from_dict(json.loads(json.dumps(record_dict(run_report(written)))))
    assert back.functions[0].recompile_events[0].causes == (cause,)
