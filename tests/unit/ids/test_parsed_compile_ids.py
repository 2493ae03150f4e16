"""Compile ids are parsed once, where the parser cuts them from a line: events carry a CompileId and their process."""

from __future__ import annotations

from guarddiag.ids import CompileId, Process
from guarddiag.logparse.events import CompileSeen, FrameNamed, GuardListing
from guarddiag.logparse.parser import LogParser

LISTING = [
    "V1203 10:00:00.000000 123 torch/_dynamo/guards.py:2000] [0/1] [__guards] GUARDS:",
    "V1203 10:00:00.000000 123 torch/_dynamo/guards.py:2000] [0/1] [__guards] TREE_GUARD_MANAGER:",
    "V1203 10:00:00.000000 123 torch/_dynamo/guards.py:2000] [0/1] [__guards] +- RootGuardManager",
]


def test_parse_takes_the_process_of_an_id_that_names_none():
    rank1 = Process.of_rank(1)
    assert CompileId.parse("0/1_2", rank1) == CompileId("0", 1, 2, rank1)
    assert CompileId.parse("child2:0/1", rank1) == CompileId("0", 1, 0, Process.of_child(2))
    assert CompileId.parse(None, rank1) is None


def test_first_attempt_drops_the_attempt_only():
    assert CompileId("0", 1, 2, Process.of_rank(1)).first_attempt == CompileId("0", 1, 0, Process.of_rank(1))
    assert str(CompileId.parse("rank1:0~1/3_1").first_attempt) == "rank1:0~1/3"


def test_a_ranked_listing_carries_its_id_parsed_and_its_process():
    events = list(LogParser().parse(["[rank1]:" + line for line in LISTING]))
    listing = next(e for e in events if isinstance(e, GuardListing))
    rank1 = Process.of_rank(1)
    assert (listing.compile_id, listing.process) == (CompileId("0", 1, 0, rank1), rank1)
    assert CompileSeen(CompileId("0", 1, 0, rank1)) in events


def test_a_line_without_a_compile_id_keeps_its_process():
    line = "[rank2]:W1203 10:00:00.000000 123 torch/_dynamo/convert_frame.py:800] torchdynamo start tracing f /x.py:3"
    (named,) = [e for e in LogParser().parse([line]) if isinstance(e, FrameNamed)]
    assert (named.compile_id, named.process, named.name) == (None, Process.of_rank(2), "f")


def test_a_cache_reset_opens_a_generation_in_the_parsed_id():
    start = "I1203 10:00:00.000000 123 torch/_dynamo/convert_frame.py:800] [0/0] torchdynamo start tracing f /x.py:3"
    lines = [start, *(line.replace("[0/1]", "[0/0]") for line in LISTING), start]
    named = [e.compile_id for e in LogParser().parse(lines) if isinstance(e, FrameNamed)]
    assert named == [CompileId("0", 0), CompileId("0~1", 0)]
