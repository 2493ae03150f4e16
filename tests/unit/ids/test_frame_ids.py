"""Frame ids and the places of limit hits and graph breaks (guarddiag.ids): parsed values that print as records write them."""

from __future__ import annotations

import pytest

from guarddiag.ids import CompileId, FrameId, Process, parse_place, place_text


@pytest.mark.parametrize(
    ("text", "frame", "process"),
    [
        ("0", "0", ""),
        ("rank1:0", "0", "rank1"),
        ("py311/rank0:0~2", "0~2", "py311/rank0"),  # a merged record's rank, after a reset
        ("!0/3", "!0/3", ""),  # compiled autograd's frame
        ("rank1:", "", "rank1"),  # a bare process
        ("?forward@/src/model.py:12", "?forward@/src/model.py:12", ""),  # a frame guarddiag named
        ("?forward@C:\\proj\\model.py:12", "?forward@C:\\proj\\model.py:12", ""),  # no process before a drive
        ("child1:rank0:0", "0", "child1:rank0"),  # a rank's line in the log of a process the script started
    ],
)
def test_a_frame_id_reads_back_as_itself(text: str, frame: str, process: str):
    fid = FrameId.parse(text)
    assert (fid.frame, str(fid.process)) == (frame, process)
    assert str(fid) == text


def test_the_compiles_of_a_frame():
    assert str(FrameId("0", Process.of_rank(1)).compile(3)) == "rank1:0/3"
    assert FrameId.parse("?f@/x/y.py:3").compile(1) == CompileId.parse("?f@/x/y.py:3/1")
    assert CompileId.parse("?my_fn/1") == CompileId("?my_fn", 1)  # an underscore is no attempt
    assert CompileId.parse("rank1:0~1/3_2").frame_id == FrameId("0~1", Process.of_rank(1))


def test_moving_to_another_process_keeps_the_text_a_tag_made():
    rank1, child1 = Process.of_rank(1), Process.of_child(1)
    assert str(FrameId("0", rank1).in_process(child1)) == "child1:rank1:0"
    assert str(FrameId("", rank1).in_process(child1)) == "child1:rank1:"
    assert str(CompileId("0", 3, 1, rank1).in_process(child1)) == "child1:rank1:0/3_1"
    assert str(CompileId("0", 3).in_process(child1)) == "child1:0/3"
    assert CompileId.parse("child1:rank1:0/3_1") == CompileId("0", 3, 1, rank1).in_process(child1)


@pytest.mark.parametrize(("frame", "generation"), [("0", 0), ("0~1", 1), ("3~12", 12), ("?f@C:\\x~1.py:3", 0), ("!0/3~1", 1)])
def test_the_cache_generation_of_a_frame(frame: str, generation: int):
    assert FrameId(frame).generation == generation


@pytest.mark.parametrize(("text", "place"), [("0/2", CompileId("0", 2)), ("rank1:", FrameId("", Process.of_rank(1))), (None, None)])
def test_a_place_reads_back(text: str | None, place: CompileId | FrameId | None):
    assert parse_place(text) == place
    assert place_text(place) == text
