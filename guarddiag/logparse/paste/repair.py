"""Undo what a web page and a Markdown editor did to one line: HTML escapes, quote markers,
the ``#`` of a log pasted into a code comment, table borders."""

from __future__ import annotations

import html
import re

from guarddiag.logparse.paste.split import MARKERS

# Quote markers: Markdown "> ", and "#" when a log was pasted into a code comment ("# >>", "# [0/8] ...").
_QUOTE = re.compile(r"^\s*(?:>\s*)+")
_COMMENT = re.compile(r"^\s*#+ ?")
# Whole HTML character references only: "&#x2" (the rest of it cut onto the next line) stays as it is.
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});")


def clean(segment: str) -> str:
    """Undo what a web page and a Markdown editor did to one line: HTML escapes, quotes, comments."""
    segment = unescaped(segment)
    for _ in range(4):  # a quote of a comment, a comment of a quote
        head = segment.lstrip()[:1]
        unmarked = _uncommented(segment) if head == "#" else _unquoted(segment) if head == ">" else segment
        if unmarked == segment:
            break
        segment = unmarked
    return segment


def unescaped(text: str) -> str:
    """The text without its HTML escapes: escaped again by each page it was copied through (bounded,
    for hostile lines)."""
    for _ in range(8):
        if "&" not in text or ";" not in text:
            break
        once = _ENTITY.sub(_entity, text)
        if once == text:
            break
        text = once
    return text


def _entity(m: re.Match[str]) -> str:
    return html.unescape(m.group())


def _unquoted(segment: str) -> str:
    """A line without its quote markers: ``> `` (one or nested), or ``>`` alone. A single ``>`` right
    before the text is kept: it is more likely the rest of a line a terminal cut (``<string>:6``)."""
    m = _QUOTE.match(segment)
    assert m is not None
    run = m.group()
    if run[-1:].isspace() or run.count(">") > 1 or m.end() == len(segment):
        rest = segment[m.end() :]
        # One blank after the markers is theirs; keep the rest of the indentation (torch's own).
        return rest if not run[-1:].isspace() else segment[len(run.rstrip()) + 1 :]
    return segment


def unbordered(line: str) -> str:
    """A table row without its borders (after re-joining: a terminal may have cut the row)."""
    stripped = line.strip()
    if len(stripped) > 1 and stripped[0] == "|" and stripped[-1] == "|" and not stripped.startswith("| +-"):
        return stripped[1:-1].strip()
    return line


def _uncommented(segment: str) -> str:
    """A log line pasted into a code comment, without its ``#``: only when a quote, a prefix or a torch
    message follows (a guard's ``# comment``, cut off by a terminal, stays as it is)."""
    rest = _COMMENT.sub("", segment, count=1)
    body = rest.lstrip()
    return rest if body.startswith((">", "[")) or MARKERS.match(body) else segment
