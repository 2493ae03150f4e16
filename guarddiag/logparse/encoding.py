"""Opening a log as text: its encoding told by its byte-order mark, decoded as it is read.

A log is UTF-8 as torch writes it, but what saved it may add a mark: Windows editors put a UTF-8 BOM
first, PowerShell's ``>`` (5.1) writes UTF-16 LE with its BOM. Read as UTF-8, a BOM glued to the first
line hid its torch prefix, and UTF-16 was NUL bytes between letters: no torch line at all. The codec
is chosen from the first bytes (a mark, else the NUL bytes of UTF-16 text without one) and decodes
incrementally, so a large log still streams; undecodable bytes are replaced, never fatal.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

# Byte-order marks, longest first: UTF-32 LE's begins with UTF-16 LE's. Each codec reads its own mark.
_MARKS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
# Bytes looked at to tell the encoding.
_HEAD = 4


def log_encoding(head: bytes) -> str:
    """The codec of a log that begins with ``head``: by its byte-order mark; without one, UTF-16 when
    its first two characters are ASCII with a NUL byte each (UTF-16 saved without a mark), else UTF-8."""
    for mark, codec in _MARKS:
        if head.startswith(mark):
            return codec
    if len(head) >= _HEAD and head[0] and head[2] and not head[1] and not head[3]:
        return "utf-16-le"
    if len(head) >= _HEAD and head[1] and head[3] and not head[0] and not head[2]:
        return "utf-16-be"
    return "utf-8"


def open_log(path: str | Path) -> TextIO:
    """A log file (``-``: standard input, left open) as text in its own encoding, lines ending as
    written (``\\r\\n`` kept; a file's own) or as universal newlines (standard input, as before)."""
    if str(path) == "-":
        return _text(open(sys.stdin.fileno(), "rb", closefd=False), None)  # noqa: SIM115 - the caller closes it
    return _text(Path(path).open("rb"), "")


def _text(raw: BinaryIO, newline: str | None) -> TextIO:
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    # peek() may return fewer bytes than asked for (a pipe): a short head reads as UTF-8 unless marked.
    codec = log_encoding(buffered.peek(_HEAD)[:_HEAD])
    return io.TextIOWrapper(buffered, encoding=codec, errors="replace", newline=newline)
