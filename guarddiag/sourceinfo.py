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
from dataclasses import dataclass

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


# What a class is, for a hint about its attributes (class_kind).
NN_MODULE, DATACLASS, PLAIN_OBJECT = "nn_module", "dataclass", "object"
# Methods that change a list, dict or set in place.
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard", "popitem", "sort", "reverse"}
)


@dataclass(frozen=True)
class Statement:
    """A statement directly in a function's body: its first line, its code, whether it is a bare call
    (``log.info(...)``, ``hist.append(x)``: its value unused, so it can move out of the function as is),
    and the names it reads."""

    line: int
    code: str
    call: bool
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mutation:
    """A statement of a function that changes, in place, an object reached from ``name`` (a parameter or
    a global): ``how`` (``append``, ``setitem``, ``+=``...) and the statement of the body it is in."""

    name: str
    how: str
    statement: Statement


@dataclass(frozen=True)
class FunctionSource:
    """A function as its source says: its parameters, the names it returns (``return loss``), the objects it
    changes in place, its body's statements, and the names it binds (its locals)."""

    name: str
    params: tuple[str, ...]
    returned: tuple[str, ...]
    mutations: tuple[Mutation, ...]
    statements: tuple[Statement, ...]
    bound: tuple[str, ...] = ()

    def statement_at(self, line: int) -> Statement | None:
        """The statement of the body that holds ``line`` (a statement spans up to the next one)."""
        return _statement_at(self.statements, line)


def _statement_at(statements: tuple[Statement, ...], line: int) -> Statement | None:
    found = None
    for s in statements:
        if s.line > line:
            break
        found = s
    return found


def _root(node: ast.expr) -> str:
    """``hist`` for ``hist``, ``hist[0]``, ``self.cache['k']``: the name an expression is reached from."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _own_nodes(fn: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function's body, not those of functions, lambdas or classes defined inside it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _changes(node: ast.AST) -> Iterable[tuple[str, str]]:
    """(root name, how) of each in-place change a node makes."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
        yield _root(node.func.value), node.func.attr
    elif isinstance(node, ast.Assign | ast.Delete):
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                yield _root(target.value), "setitem" if isinstance(node, ast.Assign) else "del"
    elif isinstance(node, ast.AugAssign):
        target = node.target
        yield (_root(target.value), "setitem") if isinstance(target, ast.Subscript) else (_root(target), "+=")


def _function_source(fn: ast.FunctionDef | ast.AsyncFunctionDef, text: str) -> FunctionSource:
    params = tuple(a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs))
    statements = tuple(
        Statement(
            s.lineno,
            ast.get_source_segment(text, s) or ast.unparse(s),
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Call),
            tuple(dict.fromkeys(n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))),
        )
        for s in fn.body
    )
    nodes = list(_own_nodes(fn))
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    declared = {name for n in nodes if isinstance(n, ast.Global) for name in n.names}
    mutations = set()
    for node in nodes:
        for root, how in _changes(node):
            # What the caller sees change: a parameter's object, or a global's (read here, never bound, or
            # declared global); `+=` on any other name only rebinds a local.
            seen_outside = root in params or root in declared or (how != "+=" and root not in bound)
            statement = _statement_at(statements, getattr(node, "lineno", 0))
            if root and seen_outside and statement is not None:
                mutations.add(Mutation(root, how, statement))
    returned = (n.value.id for n in nodes if isinstance(n, ast.Return) and isinstance(n.value, ast.Name))
    ordered = tuple(sorted(mutations, key=lambda m: (m.statement.line, m.name, m.how)))
    return FunctionSource(fn.name, params, tuple(dict.fromkeys(returned)), ordered, statements, tuple(sorted(bound - set(params))))


@functools.lru_cache(maxsize=64)
def function_at(file: str, line: int) -> FunctionSource | None:
    """The innermost function whose definition (its decorators included) holds ``line`` of ``file``: a
    compiled function by its first line, or the user's function a resume function continues; None when the
    source is not at hand."""
    if not file or line <= 0:
        return None
    found = [
        f
        for f in _functions(file)
        if min((d.lineno for d in f.decorator_list), default=f.lineno) <= line <= (f.end_lineno or f.lineno)
    ]
    if not found:
        return None
    text = read_source(file) or ""
    return _function_source(max(found, key=lambda f: f.lineno), text)


@functools.lru_cache(maxsize=64)
def _classes(path: str) -> dict[str, ast.ClassDef]:
    text = read_source(path)
    if text is None:
        return {}
    try:
        tree = ast.parse(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def class_kind(file: str, name: str, depth: int = 5) -> str:
    """What class ``name`` defined in ``file`` is: :data:`NN_MODULE` (a subclass of ``nn.Module``, through
    classes of the same file), :data:`DATACLASS`, :data:`PLAIN_OBJECT`; ``""`` when the file does not define it."""
    node = _classes(file).get(name) if file else None
    if node is None or depth <= 0:
        return ""
    if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        return DATACLASS
    for base in node.bases:
        spelled = ast.unparse(base)
        if spelled.rpartition(".")[2] == "Module" or class_kind(file, spelled, depth - 1) == NN_MODULE:
            return NN_MODULE
    return PLAIN_OBJECT
