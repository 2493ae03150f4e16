"""Whether a line is a framed torch log line, and whether a log went through a browser."""

from __future__ import annotations

import re

from guarddiag.logparse.framing import FRAME_START, LEADING_PREFIXES, PREFIX_TIME, frame

# Where a glog or bracketed-date torch prefix starts, for a framed line with other output before it.
_FRAME_START = re.compile(FRAME_START)
# Whether a line holds a second prefix needs no place where its leading prefixes start: they are optional,
# and trying them at every character made this search a fifth of a log's parse.
_PREFIX_TIME = re.compile(PREFIX_TIME)
# torchrun's prefixes before a framed line's own prefix: another prefix after them is a second line.
_LEADING = re.compile(LEADING_PREFIXES)
_HTML_ESCAPE = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|gt|lt|amp|quot|apos);")


def framed_part(line: str) -> str | None:
    """The line when it is a framed torch line, or its framed tail when other output (a progress
    bar, a shell prompt, a pytest dot) was written before it on the same line; else None."""
    text = line.rstrip("\r\n")
    if _framed(text):
        return line
    if text[:1] in (" ", "\t", ">", "|"):
        return None  # quoted, indented or in a table: a paste, not output written before a log line
    for m in _FRAME_START.finditer(text):
        if m.start() and _framed(text[m.start() :]):
            return line[m.start() :]
    return None


def mangled_line(line: str, framed: bool) -> bool:
    """A line of a log that went through a browser: HTML escapes, or a framed line holding
    another torch prefix (a flattened log)."""
    flattened = framed and _PREFIX_TIME.search(line, _LEADING.match(line).end() + 1) is not None  # type: ignore[union-attr]
    return flattened or ("&" in line and _HTML_ESCAPE.search(line) is not None)


def _framed(text: str) -> bool:
    """A torch log line; the pre-2.0 ``torchdynamo`` loggers' lines are read as a paste (LogParser
    knows their frame but not their messages)."""
    framed = frame(text)
    return framed is not None and not framed.origin.startswith("torchdynamo")
