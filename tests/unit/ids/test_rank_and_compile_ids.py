"""ids.py writes and reads torch.distributed's ``[rankN]:`` prefix and guarddiag's compile ids, once for
every reader (pipeline, the paste reader, the ledger, build, explain, the watch)."""

from __future__ import annotations

import pytest

from guarddiag.ids import CompileId, FrameId, rank_prefix, split_rank
from guarddiag.inprocess import _compile_number


def test_a_rank_prefix_reads_back():
    line = "V1203 10:00:00.000000 123 torch/_dynamo/guards.py:1] [0/1] GUARDS:"
    assert rank_prefix(3) == "[rank3]:"
    assert split_rank(rank_prefix(3) + line) == (3, line)


@pytest.mark.parametrize(
    ("line", "split"),
    [
        ("[rank12]:[0/1] x", (12, "[0/1] x")),
        ("[rank0]: Traceback", (0, " Traceback")),  # what follows the prefix is kept as is
        ("[rank]: x", (None, "[rank]: x")),
        ("[default0]:[rank0]:x", (None, "[default0]:[rank0]:x")),  # torchrun's tee prefix is framing's
        ("x [rank1]:y", (None, "x [rank1]:y")),
    ],
)
def test_split_rank_takes_only_a_leading_prefix(line, split):
    assert split_rank(line) == split


@pytest.mark.parametrize(("frame", "number", "text"), [("0", 3, "0/3"), ("rank1:0", 0, "rank1:0/0"), ("!0/3", 1, "!0/3/1")])
def test_a_compile_id_built_parses_back(frame, number, text):
    assert str(FrameId.parse(frame).compile(number)) == text
    parsed = CompileId.parse(text)
    assert parsed is not None and str(parsed.frame_id) == frame and parsed.number == number


@pytest.mark.parametrize(("text", "number"), [("3/2", 2), ("3/2_1", 2), ("!0/3/1", 1), ("rank1:0/4", 4), ("", 0), ("3", 0), ("3/x", 0)])
def test_the_watch_reads_a_ledger_compile_number_through_compile_id(text, number):
    assert _compile_number({"compile_id": text}) == number
