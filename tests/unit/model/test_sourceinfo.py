"""Roles of local names read from the user's source, and their use in cause subjects."""

from __future__ import annotations

from guarddiag.pipeline import build_from_lines
from guarddiag.render.words import cause_subject
from guarddiag.sourceinfo import local_roles
from tests.conftest import LOGS, SCENARIOS, in_checkout


def test_roles_of_a_decorated_closure():
    # co_firstlineno of a decorated function is its first decorator's line (19), the def is on 20.
    roles = local_roles(str(SCENARIOS / "closure_variable.py"), "hinge_loss", 19)
    assert roles["scores"] == "argument" and roles["labels"] == "argument"
    assert roles["reduction"] == "closure variable" and roles["margin"] == "closure variable"
    assert roles["losses"] == "local"


def test_missing_or_broken_source_gives_no_roles(tmp_path):
    assert local_roles(str(tmp_path / "gone.py"), "f", 1) == {}
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    assert local_roles(str(bad), "f", 1) == {}


def test_closure_subject_in_a_real_log():
    log = in_checkout((LOGS / "torch-2.13.0" / "closure_variable.log").read_text())
    functions, _ = build_from_lines(log.splitlines())
    (f,) = functions
    assert {cause_subject(e.causes[0]) for e in f.recompile_events} == {"value of closure variable `reduction`"}


def test_without_source_the_subject_says_local():
    log = (LOGS / "torch-2.13.0" / "closure_variable.log").read_text()
    functions, _ = build_from_lines(log.splitlines(), roles=lambda *_: {})
    (f,) = functions
    assert {cause_subject(e.causes[0]) for e in f.recompile_events} == {"value of local `reduction`"}
