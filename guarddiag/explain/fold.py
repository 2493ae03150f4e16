"""The default view of a function's guard model: the rows a user must act on stay whole, the rest fold.

A real model's cache entry checks hundreds of objects; most never change and nothing in them is the
user's to change. Rows are folded by the shape of their guard source, never by names:

* repeated elements of one container or module list (``params[0]`` .. ``params[3]``,
  ``h.0.attn`` .. ``h.11.attn``): one row ``params[0..3]``;
* internals: what functions and classes carry (``__defaults__``, closure cells, ``__code__``,
  ``__name__``, ``__class__``), attributes of an imported module (``torch.bool``), and the globals a
  library's own frame reads;
* settings: the values baked in under one object (``self.config.*``, the ``eps`` of each LayerNorm);
* types: objects checked by type only (the frame's own arguments stay rows);
* a frame of torch's or a library's own code that never recompiled (reached after a graph break in
  it, like ``Optimizer.step``'s): one row for all it reads (not torch's ``inner``, which runs the
  user's function or module).

Nothing that matters is folded: a row that differs between the cache entries of its function, or that
a recompile's cause names, stays a row of its own (:func:`matters`). ``--full`` folds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from guarddiag.explain.model import (
    CacheEntry,
    CallablesObject,
    FamilyObject,
    FoldedObject,
    GuardedObject,
    TypeObject,
    ValueObject,
)
from guarddiag.guardexpr import as_source, readable_source
from guarddiag.model import FunctionSummary

# What functions and classes carry: a library's or torch's code reads them, a user never sets them.
_INTERNALS = re.compile(r"\.__(?:defaults|kwdefaults|closure|code|name|qualname|module|class|func|self|wrapped)__\b")
# An integer subscript or a module-list index in a row's name: ``[3]``, ``.3.`` (``h.3.attn``).
_INDEX = re.compile(r"\[(\d+)\]|(?<=\.)(\d+)(?=\.|$)")
_PARENT = re.compile(r"^(?P<parent>.+?)(?:\.\w+|\['[^']*'\])$")


def matters(f: FunctionSummary, entries: Sequence[CacheEntry]) -> tuple[str, ...]:
    """The first source of each row a user must act on: rows that differ between the cache entries,
    and rows a recompile's cause (or what else changed with it) names."""
    named = {readable_source(as_source(c.source)) for e in f.recompile_events for c in (*e.causes, *e.also) if c.source}
    keyed = [{o.sources: o for o in entry.objects if not isinstance(o, CallablesObject)} for entry in entries]
    # The functions an entry calls, each by its own source: which ones a path calls follows from the
    # values; one under the same name with another id is a function passed in place of another.
    called = [
        {s: m.pinned for o in entry.objects if isinstance(o, CallablesObject) for m in o.members for s in m.sources} for entry in entries
    ]
    out: dict[str, None] = {}  # in order, looked up in constant time (a real model has thousands of rows)
    for i, rows in enumerate(keyed):
        for key, o in rows.items():
            if not key or key[0] in out:
                continue
            changes = any(other.get(key) != o for j, other in enumerate(keyed) if j != i)
            if changes or any(readable_source(s) in named for s in key):
                out[key[0]] = None
    for ids in called:
        for s, pinned in ids.items():
            other = any(o.get(s, pinned) != pinned for o in called)
            if s not in out and (other or readable_source(s) in named):
                out[s] = None
    return tuple(out)


def fold_entry(entry: CacheEntry, keep: Iterable[str], library: bool, package: str = "") -> CacheEntry:
    """``entry`` with the rows that do not matter folded (``keep``: sources of rows that matter;
    ``library``: the frame is torch's or a library's code, so its globals are that code's; ``package``:
    the frame is that package's code and never recompiled, so it folds whole)."""
    kept = set(keep)
    if package and not any(s in kept for o in entry.objects for s in o.sources):
        rows = _group(package, "code", "mixed", list(entry.objects))
        return CacheEntry(entry.compile_id, tuple(rows), entry.ambient, _folded(rows))
    modules = _module_roots(entry.objects)
    first: list[GuardedObject] = []
    internals: list[GuardedObject] = []
    loose: list[GuardedObject] = []
    callables: list[GuardedObject] = []
    for o in entry.objects:
        if isinstance(o, CallablesObject):
            callables.append(o)
        elif any(s in kept for s in o.sources):
            first.append(o)
        elif _internal(o, modules, library):
            internals.append(o)
        else:
            loose.append(o)
    # Alike rows that matter fold only among themselves: the range row is explained in full like each of them.
    first = _repeated(first)
    loose = _repeated(loose)
    values = [o for o in loose if isinstance(o, ValueObject) or isinstance(o, FamilyObject) and o.kind.startswith("attr:")]
    # The frame's own arguments stay rows: which of them a call may replace is what a user asks first.
    types = [o for o in loose if isinstance(o, TypeObject) and not o.dynamic and not o.submodules and o.name != o.root]
    summarised = {id(o) for o in (*values, *types)}
    rows = first + [o for o in loose if id(o) not in summarised]
    rows += _settings(values)
    rows += _group("", "types", "type", types)
    rows += _group("", "internals", "mixed", internals)
    rows += callables
    return CacheEntry(entry.compile_id, tuple(rows), entry.ambient, _folded(rows))


def _folded(rows: Iterable[GuardedObject]) -> int:
    return sum(o.count for o in rows if isinstance(o, FoldedObject))


def _module_roots(objects: Iterable[GuardedObject]) -> set[str]:
    """Sources of the modules the code uses (``G['torch']``): their attributes are that module's."""
    return {
        m.sources[0]
        for o in objects
        if isinstance(o, CallablesObject)
        for m in o.members
        if m.type in ("module", "GenericModule") or m.sources[0].startswith("G['__import_")
    }


def _internal(o: GuardedObject, modules: set[str], library: bool) -> bool:
    """Whether every object of a row is what code carries rather than what a user passes or sets."""
    return bool(o.sources) and all(_internal_source(s, modules, library) for s in o.sources)


def _internal_source(s: str, modules: set[str], library: bool) -> bool:
    if _INTERNALS.search(s) or any(s.startswith(m + ".") for m in modules):
        return True  # a function's or class's own attributes; an attribute of an imported module
    if not s.startswith("G[") or s.startswith("G['__import___main__']"):
        return False  # an argument, a local, or the script's own global
    # Another module's global (``__import_transformers...``), or any global of a library's own frame.
    return library or s.startswith("G['__import_")


def _repeated(rows: list[GuardedObject]) -> list[GuardedObject]:
    """Rows that differ only in an integer index, of one kind and one check, folded into one row each."""
    groups: dict[tuple[str, str, str], list[GuardedObject]] = {}
    order: list[tuple[str, str, str] | GuardedObject] = []
    for o in rows:
        if not o.name or not _INDEX.search(o.name) or isinstance(o, FamilyObject | FoldedObject | CallablesObject):
            order.append(o)
            continue
        key = (_INDEX.sub(lambda m: "[#]" if m.group(1) else "#", o.name), type(o).__name__, o.how)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(o)
    out: list[GuardedObject] = []
    for item in order:
        if not isinstance(item, tuple):
            out.append(item)
            continue
        members = groups[item]
        out.append(members[0] if len(members) == 1 else _fold(_range_name(members), "repeated", members[0].how, members))
    return out


def _range_name(members: list[GuardedObject]) -> str:
    """``params[0..3]`` for ``params[0]`` .. ``params[3]``: each index that varies shown as its range."""
    parts = [_INDEX.findall(m.name) for m in members]
    values = [sorted({int(a or b) for a, b in column}) for column in zip(*parts, strict=True)]
    shown = iter(_span(v) for v in values)
    return _INDEX.sub(lambda m: f"[{next(shown)}]" if m.group(1) else next(shown), members[0].name)


def _span(values: list[int]) -> str:
    if len(values) == 1:
        return str(values[0])
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ",".join(map(str, values))


def _settings(rows: list[GuardedObject]) -> list[GuardedObject]:
    """Values baked in under one object (``self.config.*``; a family of submodule attributes under ``self``) as one row."""
    by_parent: dict[str, list[GuardedObject]] = {}
    for o in rows:
        m = _PARENT.match(o.name) if not isinstance(o, FamilyObject) else None
        parent = o.name if isinstance(o, FamilyObject) else m["parent"] if m else o.name
        by_parent.setdefault(parent, []).append(o)
    out: list[GuardedObject] = []
    for parent, members in by_parent.items():
        out += _group(parent, "values", "value", members)
    return out


def _group(name: str, kind: str, how: str, members: list[GuardedObject]) -> list[GuardedObject]:
    if len(members) < 2:
        return list(members)
    return [_fold(name, kind, how, members)]


def _fold(name: str, kind: str, how: str, members: list[GuardedObject]) -> FoldedObject:
    return FoldedObject(
        name,
        kind,
        how,
        tuple(members),
        sum(m.count for m in members),
        tuple(s for m in members for s in m.sources),
        "|".join(m.pinned for m in members),
    )
