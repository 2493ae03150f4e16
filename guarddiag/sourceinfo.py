"""What a compiled function's local names are, read from its source with ``symtable`` (and ``ast`` for
the parameters of a function torch compiled through its ``inner`` wrapper, and for the values a graph
break left on the stack of a resume function).

Guards name objects by frame-local source (``L['scale']``); whether ``scale`` is an argument
or a closure variable is not in the log, but is in the user's file when it is at hand. A resume
function's locals are its user function's, and its ``___stack0``... are values of the break's line.
"""

from __future__ import annotations

import ast
import functools
import os
import stat
import symtable
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from guarddiag.resume import resume_of

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


class Roles(dict[str, str]):
    """Each local name of a compiled frame with its role (``argument``, ``closure variable``, ``local``);
    for a resume function also ``held``: by slot index, the expression of the user's code each stack
    slot holds (``""`` where the source does not tell), and ``line``, the line of its graph break."""

    def __init__(self, roles: Mapping[str, str] = {}, held: tuple[str, ...] = (), line: int | None = None) -> None:  # noqa: B006 - never mutated
        super().__init__(roles)
        self.held = held
        self.line = line


def local_roles(file: str, name: str, line: int | None) -> Mapping[str, str]:
    """Each local name of the function at ``file:line`` with its role; empty when the source is not at hand.
    A resume function (``torch_dynamo_resume_in_f_at_19``) is read as its user function ``f``, with the
    expressions its stack slots hold (:class:`Roles`)."""
    resume = resume_of(name, line, loose=True)
    # torch 2.2's `resume_in_f` is taken for one only where a `def f` holds its line.
    if resume is not None and (resume_of(name, line) is not None or _enclosing(file, resume.function, resume.line)):
        return _resume_roles(file, resume.function, resume.line)
    return _roles(file, name, line)


def _roles(file: str, name: str, line: int | None) -> dict[str, str]:
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


def _resume_roles(file: str, function: str, line: int | None) -> Roles:
    """The roles of the user function a resume function continues (the innermost ``def`` of that name
    around the line of its graph break), and what its stack slots hold."""
    fn = _enclosing(file, function, line)
    if fn is None or line is None:
        return Roles(line=line)
    return Roles(_roles(file, function, fn.lineno), stack_values(file, function, line), line)


def _enclosing(file: str, function: str, line: int | None) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    if not file or line is None:
        return None
    found = [f for f in _functions(file) if f.name == function and f.lineno <= line <= (f.end_lineno or f.lineno)]
    return max(found, key=lambda f: f.lineno) if found else None


# The instructions Dynamo can break the graph at with values on the stack (break_graph_if_unsupported in
# torch/_dynamo/symbolic_convert.py: the calls, COMPARE_OP, BINARY_SUBSCR; STORE_ATTR and STORE_SUBSCR leave none).
_BREAKING = (ast.Call, ast.Compare, ast.Subscript)
# Statements whose body runs with values of their own on the stack (a loop's iterator, a `with`'s exit,
# an exception being handled): what a slot holds there is not read.
_HOLDING = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.ExceptHandler, ast.Try)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# What a Python before 3.11 has on the stack for ``obj.method(...)`` as Dynamo models LOAD_METHOD: the
# bound method and a None (3.11+ pushes a NULL, which is no slot).
_NONE = "\0None"


class _Unknown(Exception):
    """A value on the stack this reader does not model: no slot of the line is named."""


@functools.lru_cache(maxsize=256)
def stack_values(file: str, function: str, line: int) -> tuple[str, ...]:
    """By slot index, the expression each value a graph break at ``line`` of ``function`` left on the
    stack holds: the operation that broke (a call, a comparison, a subscript) is the top slot, the operands
    waiting for it below. Every operation of the line that could have broken is tried, and on Python
    before and after 3.11 (a method call's extra slot): a slot is named only where they all agree."""
    fn = _enclosing(file, function, line)
    text = read_source(file)
    if fn is None or text is None:
        return ()
    parents = {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    stacks: list[list[str]] = []
    try:
        for node in _own_nodes(fn):
            if isinstance(node, _BREAKING) and node.lineno <= line <= (node.end_lineno or node.lineno):
                if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                    continue
                for old in (False, True):
                    stacks.append([_text(text, n) if isinstance(n, ast.AST) else n for n in _stack(node, fn, parents, old)])
    except _Unknown:
        return ()
    depth = max((len(s) for s in stacks), default=0)
    held = []
    for k in range(depth):
        said = {s[k] for s in stacks if len(s) > k}
        held.append(said.pop() if len(said) == 1 and _NONE not in said else "")
    return tuple(held)


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own code: not those of a nested function, class or comprehension."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _stack(node: ast.AST, fn: ast.AST, parents: Mapping[ast.AST, ast.AST], old: bool) -> list[ast.AST | str]:
    """The values on the stack once ``node`` has run: those its enclosing expressions hold, outermost
    first, then its own result. Raises :class:`_Unknown` for what is not modelled."""
    held: list[ast.AST | str] = [node]
    child = node
    while True:
        parent = parents[child]
        if isinstance(parent, ast.stmt):
            held[:0] = _held_by_statement(parent, child)
            break
        held[:0] = _held_by(parent, child, old)
        child = parent
    statement = parent
    while statement is not fn:
        statement = parents[statement]
        if isinstance(statement, _HOLDING):
            raise _Unknown
    return held


def _held_by(parent: ast.AST, child: ast.AST, old: bool) -> list[ast.AST | str]:
    """What ``parent`` keeps on the stack while ``child`` is computed: the operands evaluated before it."""
    if isinstance(parent, ast.keyword):
        return []  # the call above says what comes before
    if isinstance(parent, ast.Call):
        if child is parent.func:
            return []
        if any(isinstance(a, ast.Starred) for a in parent.args) or any(k.arg is None for k in parent.keywords):
            raise _Unknown
        callee: list[ast.AST | str] = [parent.func]
        if old and isinstance(parent.func, ast.Attribute) and not parent.keywords:
            callee.append(_NONE)
        values = [*parent.args, *(k.value for k in parent.keywords)]
        target = child.value if isinstance(child, ast.keyword) else child
        return callee + values[: values.index(target)]
    if isinstance(parent, ast.BinOp):
        return [parent.left] if child is parent.right else []
    if isinstance(parent, ast.Compare):
        if len(parent.ops) != 1:
            raise _Unknown
        return [parent.left] if child is not parent.left else []
    if isinstance(parent, ast.Subscript):
        if isinstance(child, ast.Slice) or not isinstance(parent.ctx, ast.Load):
            raise _Unknown
        return [parent.value] if child is parent.slice else []
    if isinstance(parent, ast.Tuple | ast.List | ast.Set):
        if any(isinstance(e, ast.Starred) for e in parent.elts) or not isinstance(getattr(parent, "ctx", ast.Load()), ast.Load):
            raise _Unknown
        return list(parent.elts[: parent.elts.index(child)])
    if isinstance(parent, ast.Attribute | ast.UnaryOp | ast.BoolOp | ast.IfExp | ast.NamedExpr):
        return []
    raise _Unknown


def _held_by_statement(statement: ast.stmt, child: ast.AST) -> list[ast.AST | str]:
    """What a statement keeps on the stack while its expression ``child`` is computed."""
    if isinstance(statement, ast.Expr | ast.Return | ast.If | ast.While):
        return []
    if isinstance(statement, ast.Assign | ast.AnnAssign) and child is statement.value:
        return []
    if isinstance(statement, ast.For | ast.AsyncFor) and child is statement.iter:
        return []  # the loop's iterator is made after it
    if isinstance(statement, ast.With | ast.AsyncWith) and child is statement.items[0].context_expr:
        return []
    if isinstance(statement, ast.AugAssign) and child is statement.value and isinstance(statement.target, ast.Name):
        return [ast.Name(statement.target.id, ast.Load())]
    raise _Unknown


def _text(source: str, node: ast.AST) -> str:
    """The code of an expression as the user wrote it, on one line."""
    segment = ast.get_source_segment(source, node) if getattr(node, "end_col_offset", None) is not None else None
    return " ".join((segment or ast.unparse(node)).split())


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
