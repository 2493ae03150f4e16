"""What a compiled function's local names are, read from its source with ``symtable`` (and ``ast`` for
the parameters of a function torch compiled through its ``inner`` wrapper).

Guards name objects by frame-local source (``L['scale']``); whether ``scale`` is an argument
or a closure variable is not in the log, but is in the user's file when it is at hand.
"""

from __future__ import annotations

import ast
import functools
import os
import stat
import symtable
from collections.abc import Iterable, Mapping

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


def resolve_shortened(path: str, known: Iterable[str]) -> str | None:
    """The file torch names by a shortened path (``tests/train.py``: torch.utils._traceback.shorten_filename
    cuts the directory a file shares with torch's own), found from the files the log names in full:
    one that ends with it, else under the deepest directory above torch's that holds it. None when not found."""
    path = path.replace("\\", "/")
    if os.path.isabs(path):
        return path if os.path.isfile(path) else None
    files = [k.replace("\\", "/") for k in known if k]
    for k in files:
        if k.endswith("/" + path) and os.path.isfile(k):
            return k
    for k in files:
        at = k.find("/torch/")
        base = k[:at] if at >= 0 else ""
        while base:
            candidate = f"{base}/{path}"
            if os.path.isfile(candidate):
                return candidate
            base = base.rpartition("/")[0]
    return None


@functools.lru_cache(maxsize=64)
def _functions(path: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]:
    text = read_source(path)
    if text is None:
        return ()
    try:
        tree = ast.parse(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def compiled_parameters(file: str, name: str, line: int) -> tuple[str, ...] | None:
    """The positional parameters of function ``name`` around ``line`` of ``file`` when that function is
    itself compiled (a decorator of it names ``compile``); None when it is not, or the source is not at hand."""
    found = [f for f in _functions(file) if f.name == name and f.lineno <= line <= (f.end_lineno or f.lineno)]
    if not found:
        return None
    fn = max(found, key=lambda f: f.lineno)  # the innermost
    if not any("compile" in ast.unparse(d) for d in fn.decorator_list):
        return None
    return tuple(a.arg for a in (*fn.args.posonlyargs, *fn.args.args))
