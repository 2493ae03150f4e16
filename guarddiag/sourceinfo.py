"""What a compiled function's local names are, read from its source with ``symtable``.

Guards name objects by frame-local source (``L['scale']``); whether ``scale`` is an argument
or a closure variable is not in the log, but is in the user's file when it is at hand.
"""

from __future__ import annotations

import functools
import os
import stat
import symtable
from collections.abc import Mapping

ARGUMENT, CLOSURE, LOCAL = "argument", "closure variable", "local"
# Decorators put co_firstlineno above the `def`; a few lines of them is plenty.
_MAX_DECORATOR_LINES = 20


# A log names the files it was compiled from, and a log can name anything (``/dev/zero:30``, a FIFO):
# only a regular file of a source file's size is read.
MAX_SOURCE_BYTES = 8 * 1024 * 1024


def read_source(path: str) -> str | None:
    """The text of a regular file of at most MAX_SOURCE_BYTES, else None (devices, FIFOs, huge files never block)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
            return None
        data = fh.read(MAX_SOURCE_BYTES + 1)
    try:
        return data.decode("utf-8") if len(data) <= MAX_SOURCE_BYTES else None
    except UnicodeDecodeError:
        return None


@functools.lru_cache(maxsize=64)
def _tables(path: str) -> tuple[symtable.SymbolTable, ...]:
    text = read_source(path)
    if text is None:
        return ()
    try:
        top = symtable.symtable(text, path, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    found, todo = [], [top]
    while todo:
        table = todo.pop()
        if table.get_type() == "function":
            found.append(table)
        todo.extend(table.get_children())
    return tuple(found)


def local_roles(file: str, name: str, line: int | None) -> Mapping[str, str]:
    """Each local name of the function at ``file:line`` with its role; empty when the source is not at hand."""
    if not file or line is None:
        return {}
    candidates = [t for t in _tables(file) if t.get_name() == name and 0 <= t.get_lineno() - line <= _MAX_DECORATOR_LINES]
    if not candidates:
        return {}
    table = min(candidates, key=lambda t: t.get_lineno())
    roles: dict[str, str] = {}
    for sym in table.get_symbols():
        if sym.is_parameter():
            roles[sym.get_name()] = ARGUMENT
        elif sym.is_free():
            roles[sym.get_name()] = CLOSURE
        elif sym.is_local():
            roles[sym.get_name()] = LOCAL
    return roles
