"""The record writes the model's parsed ids as the text it always wrote, and reads them back parsed;
no torch run."""

from __future__ import annotations

import json

import pytest

from guarddiag.errors import InputError
from guarddiag.ids import CompileId, FrameId, Process
from guarddiag.model import Cause, FailedCompile, FunctionSummary, GraphBreak, LimitHit, ParseStats, RecompileEvent, Refusal, Run
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict

# A frame guarddiag named (a log without compile ids) on a rank, whose file has a path and an underscore.
RANK1 = Process.of_rank(1)
NAMED = FrameId("?my_fn@/src/my_mod.py:3", RANK1)


def _run() -> Run:
    cause = Cause("value", "L['n']", "L['n'] == 1", "L['n'] == 1", cache_entry=CompileId("0", 0))
    f = FunctionSummary(
        "my_fn", "/src/my_mod.py", 3, (NAMED,), 3, (RecompileEvent(NAMED.compile(1), True, (cause,)),),
        limit_hits=(LimitHit(FrameId("", RANK1), "recompile_limit", 1, "L['n'] == 1", "eager", cause),),
        graph_breaks=(GraphBreak(None, "my_mod.py:4", "print"), GraphBreak(CompileId("0", 2, 1, RANK1), "my_mod.py:5", "x")),
        failed_compiles=(FailedCompile(NAMED.compile(2), "no_code"),),
        refusals=(Refusal("fail_on_recompile", 1, 1, ("0/0: L['n'] == 1",), cause),),
    )  # fmt: skip
    return Run(functions=(f,), parse=ParseStats(unidentified_frames=(FrameId("1", RANK1),)), source="parse")


def test_ids_are_written_as_text_and_read_back_parsed():
    data = json.loads(json.dumps(record_dict(run_report(_run()))))
    (f,) = data["functions"]
    assert f["frame_ids"] == ["rank1:?my_fn@/src/my_mod.py:3"]
    assert f["recompile_events"][0]["compile_id"] == "rank1:?my_fn@/src/my_mod.py:3/1"
    assert f["recompile_events"][0]["causes"][0]["cache_entry"] == "0/0"
    assert f["limit_hits"][0]["compile_id"] == "rank1:"
    assert [g["compile_id"] for g in f["graph_breaks"]] == [None, "rank1:0/2_1"]
    assert f["failed_compiles"][0]["compile_id"] == "rank1:?my_fn@/src/my_mod.py:3/2"
    assert f["refusals"][0]["cause"]["cache_entry"] == "0/0"
    assert data["parse"]["unidentified_frames"] == ["rank1:1"]
    assert run_from_dict(data) == _run()


@pytest.mark.parametrize("where", ["recompile_events", "failed_compiles"])
def test_a_record_whose_compile_id_is_none_is_refused(where: str):
    data = json.loads(json.dumps(record_dict(run_report(_run()))))
    data["functions"][0][where][0]["compile_id"] = "rank1:0"  # a frame id, not a compile's
    with pytest.raises(InputError, match=rf"functions\[0\]\.{where}\[0\]\.compile_id: expected a compile id"):
        run_from_dict(data)
