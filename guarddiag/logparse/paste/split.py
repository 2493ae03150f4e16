"""A line holding several messages (a flattened paste) cut where each starts, and what is left of
torch's line prefix taken off each."""

from __future__ import annotations

import re
from collections.abc import Iterator

from guarddiag.ids import CACHE_ENTRY, COMPILE_ID
from guarddiag.logparse.blocks import (
    GUARD_COUNT,
    LIMIT_ADVICE,
    LIMIT_FUNCTION_TEXT,
    LIMIT_TEXT,
    RECOMPILING_TEXT,
    STACK_TEXT,
    TRIGGERED_TEXT,
    TUPLE_START,
)
from guarddiag.logparse.framing import ARTIFACT, CLOCK, DAY, FRAME_START, GLOG_LEVEL, GLOG_TIME, LEVEL_NAMES
from guarddiag.logparse.paste.messages import FAIL_REASON_TEXT, OLD_LIMIT_TEXT, OLD_ONE_LINER_TEXT, SAME_FRAME_TEXT

# A glog origin cut at its front by a terminal or an excerpt: ".../guards.py:2772]" (framing's
# origin is whole: any text up to ":LINE]").
_CUT_ORIGIN = r"(?:\.\.\.)?[^\s\[\]]*\.py:\d+\]"

# Where a message, a part of one, or a torch prefix starts inside a line (a flattened paste): the
# parser's spellings (blocks, framing), found anywhere in the line rather than at its start.
# Every alternative is a literal or a bounded pattern: one scan of the line, no backtracking.
MARKERS = re.compile(
    rf"{TUPLE_START}{RECOMPILING_TEXT}"
    rf"|(?<!{TUPLE_START}){RECOMPILING_TEXT}"
    rf"|{TRIGGERED_TEXT}"
    rf"|{GUARD_COUNT}"
    rf"|- {CACHE_ENTRY}: "
    rf"|{STACK_TEXT}"
    rf"|{re.escape(LIMIT_TEXT)}"
    rf"|{OLD_LIMIT_TEXT}"
    rf"|{OLD_ONE_LINER_TEXT}"
    rf"|\b{LIMIT_FUNCTION_TEXT}"
    r"|\blast reason: "
    r"|(?<= )reasons: "  # the words of blocks.LIMIT_REASON_TEXT, where a message starts
    rf"|(?i:{LIMIT_ADVICE})"  # torch writes it as a sentence: "To log all ..."
    rf"|{SAME_FRAME_TEXT}"
    rf"|{FAIL_REASON_TEXT}"
    rf"|{FRAME_START}"
    rf"|(?<!\S){_CUT_ORIGIN} (?=\[)"  # a glog origin cut short: ".../guards.py:2772] [16/8]"
    rf"|(?<!\S)\[{CACHE_ENTRY}\] \[{ARTIFACT}\] "  # a prefix cut to its compile id: "[0/1] [__recompiles] "
)
# Markers that end a torch 2.1 tuple message: a prefix or another message, not a part of one.
_TUPLE_ENDS = ("(", "Recompiling", "torch", "[", "V", "I", "W", "E", "D", "C", "Guard failed", "To ", "to ")
# Pieces whose tail lists items separated by " - " once the line breaks are gone.
_LISTS_ITEMS = (TRIGGERED_TEXT, STACK_TEXT)

# What may be left of torch's line prefix, one token at a time (each anchored, each bounded): the
# parts of framing's prefixes, each on its own, as a cut or mangled prefix leaves them.
_RANK = re.compile(r"\[rank(\d+)\]:\s*")
_PREFIX_TOKENS = re.compile(
    r"\s+"
    r"|\[[A-Za-z_]+\d+\]:"  # torchrun --tee: [default0]:
    rf"|{GLOG_LEVEL}?{GLOG_TIME}(?: +\d+(?= ))?"  # glog time, level and pid or thread id
    rf"|{GLOG_LEVEL}(?= \[)"  # the level letter alone: "W [0/8] ..."
    rf"|{_CUT_ORIGIN}"
    rf"|\[{COMPILE_ID}\]"
    rf"|\[{ARTIFACT}\]"
    rf"|\[?{DAY}[ T]{CLOCK}(?:[.,]\d+)?\]?"  # a date, bracketed or not
    rf"|(?:{LEVEL_NAMES}):(?=torch)"  # logging.basicConfig level
    r"|torch(?:dynamo)?(?:\.\w+)+: ?"  # logger name: "torch._dynamo.guards.__recompiles: "
    rf"|\[(?:{LEVEL_NAMES})\]:?"  # "[DEBUG]" of a logger name, "[DEBUG]:" of a bare format
)


def split_messages(line: str) -> Iterator[str]:
    """The messages of a line, cut where a torch message, a part of one or a prefix starts.

    A torch 2.1 tuple (``('Recompiling function f in x.py:3', "triggered by ...")``) is one
    message: only a prefix or another message ends it. A prefix stays with the message after it."""
    for piece, _, _ in pieces(line):
        yield piece


def pieces(line: str) -> Iterator[tuple[str, int | None, str]]:
    """``(piece, rank, body)`` of each message of a line (:func:`split_messages`): the piece as it is in
    the line, the rank its prefix names, and the piece without its prefix. One scan of the line, and
    each prefix read once: a prefix alone (or its first part: a glog time before its origin) goes with
    what follows it."""
    start = body_at = 0
    rank: int | None = None
    in_tuple = False
    for m in MARKERS.finditer(line):
        at = m.start()
        if in_tuple and not m.group().startswith(_TUPLE_ENDS):
            continue
        in_tuple = m.group()[0] == "("
        if at == body_at:
            continue
        more_rank, body = strip_prefix(line[body_at:at])  # each part of the line read once
        rank = more_rank if more_rank is not None else rank
        if not body.strip():
            body_at = at  # a prefix alone, so far
            continue
        yield from _items(line[start:at], rank, body)
        start = body_at = at
        rank = None
    more_rank, body = strip_prefix(line[body_at:])
    yield from _items(line[start:], more_rank if more_rank is not None else rank, body)


def _items(piece: str, rank: int | None, body: str) -> Iterator[tuple[str, int | None, str]]:
    """A piece (its ``body`` ends it), or, when a flattened line put a list on it (``triggered by ...:
    - a - b``), its head and each of its items."""
    if " - " not in body or not body.startswith(_LISTS_ITEMS):
        yield _unmarked_end(piece), rank, _unmarked_end(body)
        return
    prefix = piece[: len(piece) - len(body)]
    head, _, rest = _unmarked_end(body).partition(":")
    yield prefix + head + ":", rank, head + ":"
    for item in rest.split(" - "):
        item = _unmarked_end(item).strip()
        if item.strip("-#>| "):
            text = "- " + item.removeprefix("- ")
            yield text, None, text


def _unmarked_end(piece: str) -> str:
    """A piece without the marks a flattened line left at its end: the dash of the next list item, the
    quote marker (``>``, ``# >>``) or table border (``|``) of the next line. Linear: one walk back."""
    end = len(piece.rstrip())
    while end:
        start = end
        while start and piece[start - 1] in "-#>|":
            start -= 1
        if start == end or (start and not piece[start - 1].isspace()):
            break
        while start and piece[start - 1].isspace():
            start -= 1
        end = start
    return piece[:end]


def strip_prefix(piece: str) -> tuple[int | None, str]:
    """``(rank, body)``: whatever is left of a torch prefix taken off a piece of a line."""
    rank = None
    pos = 0
    n = len(piece)
    while pos < n:
        m = _RANK.match(piece, pos)
        if m is not None:
            rank = int(m.group(1))
            pos = m.end()
            continue
        m = _PREFIX_TOKENS.match(piece, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
    return rank, piece[pos:]
