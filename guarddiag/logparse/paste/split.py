"""A line holding several messages (a flattened paste) cut where each starts, and what is left of
torch's line prefix taken off each."""

from __future__ import annotations

import re
from collections.abc import Iterator

# Where a message, a part of one, or a torch prefix starts inside a line (a flattened paste).
# Every alternative is a literal or a bounded pattern: one scan of the line, no backtracking.
MARKERS = re.compile(
    r"\(['\"]Recompiling function "
    r"|(?<!\(['\"])Recompiling function "
    r"|triggered by the following guard failure"
    r"|guard \d+ failures:"
    r"|- !?\d+(?:/\d+)+(?:_\d+)?: "
    r"|User stack trace:"
    r"|torch\._dynamo hit config\."
    r"|torchdynamo hit (?:config\.|recompilation cache limit)"
    r"|\bfunction: '"
    r"|\blast reason: "
    r"|(?<= )reasons: "
    r"|[Tt]o (?:log all|diagnose) recompilation"
    r"|Guard failed on the same frame"
    r"|Guard fail reason: "
    r"|(?:\[rank\d+\]:)?[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d{6} "
    r"|(?<!\S)(?:\.\.\.)?[^\s\[\]]*\.py:\d+\] (?=\[)"  # a glog origin cut short: ".../guards.py:2772] [16/8]"
    r"|(?<!\S)\[!?\d+/\d+(?:_\d+)?\] \[__\w+\] "  # a prefix cut to its compile id: "[0/1] [__recompiles] "
    r"|(?:\[rank\d+\]:)?\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] "
)
# Markers that end a torch 2.1 tuple message: a prefix or another message, not a part of one.
_TUPLE_ENDS = ("(", "Recompiling", "torch", "[", "V", "I", "W", "E", "D", "C", "Guard failed", "To ", "to ")
# Pieces whose tail lists items separated by " - " once the line breaks are gone.
_LISTS_ITEMS = ("triggered by the following guard failure", "User stack trace:")

# What may be left of torch's line prefix, one token at a time (each anchored, each bounded).
_RANK = re.compile(r"\[rank(\d+)\]:\s*")
_PREFIX_TOKENS = re.compile(
    r"\s+"
    r"|\[[A-Za-z_]+\d+\]:"  # torchrun --tee: [default0]:
    r"|[VIWEDC]?\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+(?= ))?"  # glog time, level and pid or thread id
    r"|[VIWEDC](?= \[)"  # the level letter alone: "W [0/8] ..."
    r"|(?:\.\.\.)?[^\s\]\[]*\.py:\d+\]"  # glog origin, maybe cut at the front: ".../guards.py:2772]"
    r"|\[!?\d+(?:/\d+)*(?:_\d+)?\]"  # compile id
    r"|\[__\w+\]"  # artifact
    r"|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?"  # a date, bracketed or not
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):(?=torch)"  # logging.basicConfig level
    r"|torch(?:dynamo)?(?:\.\w+)+: ?"  # logger name: "torch._dynamo.guards.__recompiles: "
    r"|\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]:?"  # "[DEBUG]" of a logger name, "[DEBUG]:" of a bare format
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
