"""Apply the lines a fix hint says to write (``guarddiag explain --format json``) to a copy of a script.

Mechanical, as a user reads the JSON: a ``top_of_script`` line goes after the script's leading imports; a
``before_each_call`` line before each statement that calls the compiled function, its ``target`` being the
expression passed for that parameter; a ``wrap_argument`` line replaces that expression; an
``after_each_call`` line leaves the function (the statement at ``at``) and follows each call, the
function's parameters being the values passed and ``target`` the call's result. Nothing here knows a
hint id: what a line says is all it does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

RESULT = "_hint_result"


class NotApplicable(Exception):
    """The script has no place the line says (no call of the function, a call inside a comprehension)."""


@dataclass
class _Site:
    """A statement of the script that calls the compiled function, and what the lines do around it."""

    stmt: ast.stmt
    call: ast.Call
    params: tuple[str, ...]
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    result: str = ""


def apply_lines(text: str, lines: list[dict]) -> str:
    """``text`` with every line applied; NotApplicable when one has no place in it."""
    tree = ast.parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    top: list[str] = []
    removed: list[ast.stmt] = []
    sites: dict[int, _Site] = {}
    for line in lines:
        where = line["where"]
        if where == "top_of_script":
            top.append(line["code"])
            continue
        for site in _sites(tree, parents, line["function"], sites):
            args = _arguments(site)
            passed = {line["target"]: args[line["target"]]} if line["target"] in args else {}
            if where == "before_each_call":
                site.before.append(_renamed(line["code"], passed))
            elif where == "wrap_argument":
                _replace_argument(site, line["target"], ast.parse(_renamed(line["code"], passed), mode="eval").body)
            elif where == "after_each_call":
                site.result = site.result or _result_of(site)
                names = {**args, **({line["target"]: ast.Name(site.result)} if line["target"] else {})}
                site.after.append(_renamed(line["code"], names))
            else:
                raise NotApplicable(f"unknown place {where!r}")
        if where == "after_each_call":
            removed.append(_statement_at(tree, int(line["at"].rpartition(":")[2])))
    return _edited(text, tree, top, removed, list(sites.values()))


def _sites(tree: ast.Module, parents: dict[ast.AST, ast.AST], function: str, sites: dict[int, _Site]) -> list[_Site]:
    """The statements that call ``function``'s compiled callable: a function decorated with torch.compile is
    called by its name; a method (``forward``) through the names bound to ``torch.compile(...)``."""
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    if not defs:
        raise NotApplicable(f"no function {function!r} in the script")
    fn = defs[0]
    in_class = isinstance(parents.get(fn), ast.ClassDef)
    params = tuple(a.arg for a in (*fn.args.posonlyargs, *fn.args.args))[1 if in_class else 0 :]
    names = set() if in_class else {function}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "torch.compile":
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names and node not in fn.decorator_list:
            stmt = _statement_of(node, parents)
            if _in_comprehension(node, stmt, parents):
                raise NotApplicable(f"a call of {function!r} inside a comprehension has no statement of its own")
            found.append(sites.setdefault(id(stmt), _Site(stmt, node, params)))
    if not found:
        raise NotApplicable(f"no call of {function!r} in the script")
    return found


def _statement_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.stmt:
    while not isinstance(node, ast.stmt):
        node = parents[node]
    return node


def _in_comprehension(node: ast.AST, stmt: ast.stmt, parents: dict[ast.AST, ast.AST]) -> bool:
    while node is not stmt:
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp | ast.Lambda):
            return True
        node = parents[node]
    return False


def _arguments(site: _Site) -> dict[str, ast.expr]:
    """Each parameter the call passes, and the expression it passes."""
    bound = dict(zip(site.params, site.call.args, strict=False))
    bound.update({k.arg: k.value for k in site.call.keywords if k.arg})
    return bound


def _replace_argument(site: _Site, param: str, new: ast.expr) -> None:
    index = site.params.index(param)
    if index < len(site.call.args):
        site.call.args[index] = new
    else:
        for k in site.call.keywords:
            if k.arg == param:
                k.value = new


def _result_of(site: _Site) -> str:
    """The name the call's result is bound to; a call whose result is not bound to a name is bound to RESULT first."""
    stmt = site.stmt
    if isinstance(stmt, ast.Assign) and stmt.value is site.call and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.Expr) and stmt.value is site.call:
        site.stmt = ast.Assign([ast.Name(RESULT, ast.Store())], site.call, lineno=stmt.lineno)
        site.stmt.end_lineno, site.stmt.col_offset = stmt.end_lineno, stmt.col_offset
        return RESULT
    raise NotApplicable(f"the call at line {stmt.lineno} is inside an expression: bind its result to a name first")


def _renamed(code: str, names: dict[str, ast.expr]) -> str:
    """``code`` with each name read replaced by the expression passed for it."""

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return names[node.id] if node.id in names and isinstance(node.ctx, ast.Load) else node

    return ast.unparse(Rename().visit(ast.parse(code)))


def _statement_at(tree: ast.Module, line: int) -> ast.stmt:
    """The statement of a function's body that starts at ``line``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for stmt in node.body:
                if stmt.lineno == line:
                    return stmt
    raise NotApplicable(f"no statement of a function starts at line {line}")


def _edited(text: str, tree: ast.Module, top: list[str], removed: list[ast.stmt], sites: list[_Site]) -> str:
    lines = text.splitlines()
    edits: list[tuple[int, int, list[str]]] = []  # (first line index, end line index, replacement), 0-based, end exclusive
    for site in sites:
        indent = " " * site.stmt.col_offset
        body = [indent + part for code in site.before for part in code.splitlines()]
        body += [indent + part for part in ast.unparse(site.stmt).splitlines()]
        body += [indent + part for code in site.after for part in code.splitlines()]
        edits.append((site.stmt.lineno - 1, site.stmt.end_lineno or site.stmt.lineno, body))
    for stmt in removed:
        edits.append((stmt.lineno - 1, stmt.end_lineno or stmt.lineno, []))
    if top:
        first = next(
            (s for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom) and not _is_docstring(s, tree)), None
        )
        at = first.lineno - 1 if first is not None else len(lines)
        edits.append((at, at, top))
    # From the bottom up, a statement replaced before a line inserted at its start (both at one index).
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:end] = replacement
    return "\n".join(lines) + "\n"


def _is_docstring(stmt: ast.stmt, tree: ast.Module) -> bool:
    return stmt is tree.body[0] and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
