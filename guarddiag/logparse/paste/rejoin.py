"""Lines a terminal cut at its width, re-joined."""

from __future__ import annotations

import re

from guarddiag.ids import CACHE_ENTRY
from guarddiag.logparse.framing import ARTIFACT, LEVEL_NAMES, RANK_PREFIX
from guarddiag.logparse.paste.split import MARKERS, strip_prefix

# What is left of a torch prefix at a line's start, that no line a terminal cut goes on with: a rank,
# a compile id ("[0/8] ", never "[0]"), an artifact, a log level.
_PREFIX_START = re.compile(
    rf"{RANK_PREFIX}|\[{CACHE_ENTRY}\] |\[{ARTIFACT}\] |\[(?:{LEVEL_NAMES})\]:?|(?:{LEVEL_NAMES}):torch"
)
# How a line a terminal cut may end, that no whole line ends with (an open bracket, the next item of a tuple).
_OPENERS = ("(", "[", "{", "('", '("', "['", '["', ", '", ', "')

_DIGITS = re.compile(r"\d+")

# Terminal widths below this are not taken for a wrap: too many ordinary lines share a short length.
_MIN_WRAP = 40
WINDOW = 1000  # lines read before deciding the wrap width (and whether a framed log is a wrapped paste)


class Rejoiner:
    """Re-joins lines that a terminal cut at its width.

    The width is found in the first lines read (:func:`_wrap_evidence`); a line of that length continues
    on the next one unless the next one starts a message or a torch prefix of its own. The indentation
    every line of a paste has (indented by 4 in Markdown, after the terminal cut it) is taken off first:
    the rest of a cut line was indented too. A line's length is the length of its text once cleaned
    (quote markers and HTML escapes added after the terminal cut it) or the length it had as read (a
    text quoted, commented or escaped before a terminal cut it): whichever shows more cut lines."""

    def __init__(self) -> None:
        self.window: list[tuple[str, int]] | None = []
        self.width = 0
        self._as_read = False  # lines measured by their length as read, not cleaned
        self._indent = ""
        self._pending = ""
        self._pending_length = 0

    def feed(self, line: str, length: int) -> list[str]:
        """A cleaned line and its length as read; the whole lines it completed."""
        if self.window is not None:
            if len(self.window) < WINDOW:
                self.window.append((line, length))
                return []
            # Decided at the line after the window, not at its last: a reader that asks the width there and
            # stops (a framed log, read by the log parser) has re-joined and split none of its lines.
            out = self._decide()
            return out + self._join(line.removeprefix(self._indent), length)
        return self._join(line.removeprefix(self._indent), length)

    def finish(self) -> list[str]:
        out = self._decide() if self.window is not None else []
        if self._pending:
            out.append(self._pending)
            self._pending = ""
        return out

    def wrap_width(self) -> int:
        """The width of the lines read so far (0: not cut)."""
        if self.window is None:
            return self.width
        return self._measure(self.window)[0]

    def _measure(self, window: list[tuple[str, int]]) -> tuple[int, bool, str, list[str]]:
        """(width, measured as read, indentation, the lines without it)."""
        indent, texts = _dedented([text for text, _ in window])
        cleaned = _wrap_evidence(texts)
        as_read = _wrap_evidence(texts, [length for _, length in window])
        width, _ = max(cleaned, as_read, key=lambda e: e[1])
        return width, as_read[1] > cleaned[1], indent, texts

    def _decide(self) -> list[str]:
        window = self.window or []
        self.window = None
        self.width, self._as_read, self._indent, texts = self._measure(window)
        out: list[str] = []
        for text, (_, length) in zip(texts, window, strict=True):
            out += self._join(text, length)
        return out

    def _join(self, line: str, length: int) -> list[str]:
        size = length if self._as_read else len(line)
        out = []
        if self._pending:
            if not _goes_on(self._pending, line):
                out.append(self._pending)
                self._pending = ""
            else:
                line, size, self._pending = self._pending + line, self._pending_length + size, ""
        if self.width and line and size % self.width == 0:
            self._pending, self._pending_length = line, size
            return out
        out.append(line)
        return out


def _dedented(lines: list[str]) -> tuple[str, list[str]]:
    """The indentation every non-blank line has, and the lines without it."""
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
    indent = min(indents, key=len, default="")
    while indent and not all(i.startswith(indent) for i in indents):
        indent = indent[:-1]
    if not indent:
        return "", lines
    return indent, [line.removeprefix(indent) for line in lines]


def _wrap_evidence(lines: list[str], lengths: list[int] | None = None) -> tuple[int, int]:
    """(width, lines cut at it): the longest line's length (or of ``lengths``, the lines' lengths as
    read), when it is long enough for a terminal and the lines show they were cut there: two lines of
    that length, of different messages, each go on in the next line (one that starts no message or
    prefix of its own). A log's own longest lines are one message repeated (the same text but for its
    numbers), or are followed by lines of their own: neither is taken for a wrap; (0, 0)."""
    sizes = lengths if lengths is not None else [len(line) for line in lines]
    top = max(sizes, default=0)
    if top < _MIN_WRAP:
        return 0, 0
    cut: set[str] = set()
    count = 0
    for size, line, after in zip(sizes, lines, lines[1:], strict=False):
        if size == top and _goes_on(line, after):
            cut.add(_DIGITS.sub("0", line))
            count += 1
    return (top, count) if len(cut) >= 2 else (0, 0)


def _goes_on(line: str, after: str) -> bool:
    """Whether ``after`` may be the rest of ``line``, cut by a terminal: it starts no message or prefix of
    its own (it may be the padding alone), or ``line`` cannot end there: a torch prefix alone (cut from
    its message), or an open bracket (``('`` of a torch 2.1 tuple)."""
    if not after:
        return False
    if not _starts_anew(after):
        return True
    body = strip_prefix(line)[1].rstrip()
    return not body or body.endswith(_OPENERS)


def _starts_anew(line: str) -> bool:
    """Whether a line is a message or a prefix of its own, not the rest of a line cut before it (a
    glog origin counts only when it shows it was cut short, ``.../guards.py:2772] [16/8]``: else it is
    the rest of a prefix a terminal cut inside its path)."""
    text = line.lstrip()
    if _PREFIX_START.match(text):
        return True
    m = MARKERS.match(text)
    return m is not None and (text.startswith("...") or not m.group().endswith("] "))
