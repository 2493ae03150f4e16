"""Compile ids, processes and function keys (guarddiag.ids) on the ids of the recorded logs."""

from __future__ import annotations

import pytest

from guarddiag.ids import MAIN_PROCESS, CompileId, FrameId, FunctionKey, Process
from guarddiag.logparse.framing import frame
from guarddiag.merge import in_process
from tests.conftest import LOGS
from tests.unit.diff.test_diff import _log


def _compile_ids(name: str) -> list[tuple[int | None, str]]:
    """(rank, compile id) of every framed line of a recorded log that carries one."""
    framed = (frame(line) for line in (LOGS / name).read_text(encoding="utf-8", errors="replace").splitlines())
    return [(f.rank, f.compile_id) for f in framed if f is not None and f.compile_id is not None]


@pytest.mark.parametrize(
    ("text", "frame_id", "number", "attempt", "process"),
    [
        ("0/1", "0", 1, 0, ""),  # torch-2.13.0/*.log
        ("0/1_1", "0", 1, 1, ""),  # a second attempt of compile 1 (torch-2.13.0/graph_break.log)
        ("!1/1/1_1", "!1/1", 1, 1, ""),  # compiled autograd (handmade/v2_13_compiled_autograd_ids.log)
        ("rank1:0/3", "rank1:0", 3, 0, "rank1"),  # a [rank1]: line (handmade/v2_3_torchrun_ranks.log)
        ("child1:0~1/0", "child1:0~1", 0, 0, "child1"),  # after a reset, in a process the script started
    ],
)
def test_parse(text: str, frame_id: str, number: int, attempt: int, process: str):
    cid = CompileId.parse(text)
    assert cid is not None
    assert (str(cid.frame_id), cid.number, cid.attempt, str(cid.process)) == (frame_id, number, attempt, process)
    assert str(cid) == text


@pytest.mark.parametrize("text", ["", None, "!0", "!1", "0", "rank1:", "rank0:0", "0/x", "0/1_a"])
def test_what_is_no_compile_id(text: str | None):
    """Frame ids, a bare process and torn ids are not compile ids."""
    assert CompileId.parse(text) is None


@pytest.mark.parametrize(
    "name",
    [
        "torch-2.13.0/graph_break.log",
        "handmade/v2_13_compiled_autograd_ids.log",
        "handmade/v2_3_torchrun_ranks.log",
        "torch-2.1.2/grad_mode.log",
    ],
)
def test_every_recorded_id_reads_back_as_itself(name: str):
    ids = _compile_ids(name)
    assert ids
    for rank, cid in ids:
        process = MAIN_PROCESS if rank is None else Process.of_rank(rank)
        parsed = CompileId.parse(cid, process)
        if "/" not in cid:
            assert parsed is None, cid  # compiled autograd's own id (`!0`) names no compile of a frame
            continue
        text = cid if rank is None else f"rank{rank}:{cid}"
        assert parsed is not None and str(parsed) == text and CompileId.parse(text) == parsed
        assert str(parsed.process) == ("" if rank is None else f"rank{rank}")


def test_ranks_keep_compiles_of_different_ranks_apart():
    ranks = _compile_ids("handmade/v2_3_torchrun_ranks.log")
    ids = {str(CompileId.parse(cid, Process.of_rank(rank))) for rank, cid in ranks if rank is not None}
    assert {"rank0:0/0", "rank1:0/0"} <= ids
    assert str(FrameId("", Process.of_rank(1))) == "rank1:"
    assert str(CompileId.parse("0/1")) == "0/1"


@pytest.mark.parametrize(
    ("text", "process", "rest"),
    [("rank1:0/3", "rank1", "0/3"), ("rank1:", "rank1", ""), ("rank1:0", "rank1", "0"), ("child2:rank0:0", "child2:rank0", "0"),
     ("0/1", "", "0/1"), ("?forward@C:\\proj\\model.py:12", "", "?forward@C:\\proj\\model.py:12"), ("rankx:0", "", "rankx:0"),
     ("", "", "")],
)  # fmt: skip
def test_the_processes_an_id_begins_with(text: str, process: str, rest: str):
    found, after = Process.split(text)
    assert (str(found), after) == (process, rest)
    assert found == Process.parse(process)


def test_generations_and_tags():
    assert str(CompileId("0", 1, 2).in_generation(1)) == "0~1/1_2"
    assert str(CompileId("!0/3", 1).in_generation(2)) == "!0/3~2/1"
    assert CompileId("0", 1).in_generation(0) == CompileId("0", 1)
    assert str(CompileId("0", 1, 0, Process.of_child(1))) == "child1:0/1"
    (scale,) = [f for f in _log("torch-2.13.0/reset_and_failures.log").functions if f.name == "scale"]
    assert scale.frame_ids == (FrameId("2"), FrameId("0~1"))  # compiled again under a new frame id after torch._dynamo.reset()


def test_function_keys_name_the_process():
    run = _log("handmade/v2_3_torchrun_ranks.log")
    keys = sorted(f.key for f in run.functions)
    assert keys == [(Process.of_rank(r), "train_step", "/workspace/train.py", 41) for r in (0, 1)]
    assert [str(k) for k in keys] == ["rank0:train_step@/workspace/train.py:41", "rank1:train_step@/workspace/train.py:41"]
    (main,) = _log("torch-2.13.0/module_int_attribute.log").functions
    assert main.process == MAIN_PROCESS and str(main.key) == f"forward@{main.file}:30"
    child = in_process(main, Process.of_child(1))
    assert child.process == Process.of_child(1) and child.key == FunctionKey(Process.of_child(1), "forward", main.file, 30)
    assert str(child.recompile_events[0].compile_id) == "child1:0/1"
