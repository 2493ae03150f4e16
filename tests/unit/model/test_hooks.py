"""Late hooks in the run record: their JSON round trip, old records without them, and the warning the
reports give for a hook that compiled code skipped (and for no other)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from guarddiag.errors import InputError
from guarddiag.model import LateHook, Run
from guarddiag.pipeline import parse_logs
from guarddiag.render import markdown, table
from guarddiag.render.summary import run_notes
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import LOGS

LOG = LOGS / "torch-2.13.0" / "graph_break.log"
SKIPPED = LateHook("forward", "Linear", "0", "Sequential", "/home/u/late_hook.py", 19, calls=3, grad_calls=3, ran=0, traced=0)
WARNING = (
    "a forward hook registered at late_hook.py:19 on `Linear` (`0` in the compiled `Sequential`) after torch.compile "
    "had compiled it ran 0 of 3 calls: compiled code does not run hooks added later (skip_nnmodule_hook_guards=True, "
    "torch's default); register hooks before the first call, or run with --flag skip_nnmodule_hook_guards=false "
    "(the module then recompiles when hooks change)"
)


def _run(*hooks: LateHook, **changes: object) -> Run:
    return replace(parse_logs([str(LOG)]), source="run", late_hooks=hooks, **changes)


def test_late_hooks_survive_the_json_round_trip():
    run = _run(SKIPPED, replace(SKIPPED, kind="full_backward_pre", path="", line=None, traced=2))
    data = json.loads(json.dumps(record_dict(run_report(run))))
    assert data["late_hooks"][0] == {
        "kind": "forward", "module": "Linear", "path": "0", "compiled": "Sequential", "file": "/home/u/late_hook.py",
        "line": 19, "calls": 3, "grad_calls": 3, "ran": 0, "traced": 0,
    }
    assert run_from_dict(data) == run


def test_a_record_written_before_late_hooks_loads_without_them():
    data = record_dict(run_report(_run(SKIPPED)))
    del data["late_hooks"]
    assert run_from_dict(data).late_hooks == ()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [("kind", "backward", "late_hooks[0].kind: expected one of forward, forward_pre"), ("calls", "3", "late_hooks[0].calls")],
)
def test_a_hand_edited_late_hook_is_refused_naming_the_field(field: str, value: object, says: str):
    data = record_dict(run_report(_run(SKIPPED)))
    data["late_hooks"][0][field] = value
    with pytest.raises(InputError, match=re.escape(f"not a valid guarddiag run record ({says}")):
        run_from_dict(data, "run.json")


def test_a_skipped_hook_is_a_warning_in_the_table_and_the_markdown():
    run = _run(SKIPPED)
    assert ("warning", WARNING) in run_notes(run_report(run))
    assert table.render(run_report(run)).splitlines()[1] == f"warning: {WARNING}"
    assert f"> **warning**: {WARNING}" in markdown.render(run_report(run))


@pytest.mark.parametrize(
    "hook",
    [
        replace(SKIPPED, ran=3),  # ran on every call (eagerly: the module graph-broke, or runs uncompiled)
        replace(SKIPPED, traced=1),  # Dynamo compiled it into the graph: the graph runs it
        replace(SKIPPED, calls=0, grad_calls=0),  # the compiled module was not called after it
        replace(SKIPPED, kind="full_backward", grad_calls=0),  # no call with grad enabled: no backward expected
        replace(SKIPPED, kind="full_backward", ran=1),  # a backward hook runs per backward, not per call
    ],
)
def test_a_hook_that_ran_or_had_no_call_to_run_in_is_not_reported(hook: LateHook):
    assert not [text for kind, text in run_notes(run_report(_run(hook))) if "hook registered" in text]


def test_the_warning_names_the_kind_the_module_and_drops_advice_already_followed():
    backward = replace(SKIPPED, kind="full_backward", path="", module="Sequential", grad_calls=2)
    [(kind, text)] = run_notes(run_report(_run(backward, config={"skip_nnmodule_hook_guards": False})))
    assert kind == "warning"
    assert text == (
        "a backward hook registered at late_hook.py:19 on the compiled `Sequential` after torch.compile had compiled it "
        "ran 0 times in 2 calls with grad enabled; register hooks before the first call of the compiled module"
    )
