"""One row of ``guarddiag explain`` in words (:class:`ObjectWords`), and the words of a folded row.

The default view folds rows that need no action (guarddiag/explain/fold.py); a folded row says what
it holds and how many, and ``--full`` lists each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from guarddiag.explain.model import FamilyObject, FoldedObject, GuardedObject


@dataclass(frozen=True)
class ObjectWords:
    """One object (or a collapsed family of similar objects) and how a cache entry checks it."""

    name: str
    how: str
    detail: str
    recompiles: tuple[str, ...] = ()
    no_recompile: tuple[str, ...] = ()
    count: int = 1
    sources: tuple[str, ...] = ()
    # What the entry pinned (ids, values, sizes): compared across entries, never shown as such.
    pinned: str = ""
    # A row the user must act on (it differs between entries, or a cause names it): never folded, always explained.
    matters: bool = False


_SHOWN = 4


def folded_words(o: FoldedObject, say: Callable[[GuardedObject], ObjectWords]) -> ObjectWords:
    """A folded row: ``params[0..3] (4 objects): id() each``, ``self.config: 5 values baked in (...)``."""
    members = [say(m) for m in o.members]
    common = {"count": o.count, "sources": o.sources, "pinned": o.pinned}
    if o.kind == "repeated":
        details = list(dict.fromkeys(m.detail for m in members))
        detail = f"{details[0]} each" if len(details) == 1 else _listed(details, " | ")
        # Each member's sentences said of the range: `params[0..3]` for `params[0]`, `params[1]`...
        said = [(f"`{m.name}`", w) for m, w in zip(o.members, members, strict=True)]
        return ObjectWords(
            f"`{o.name}` ({len(members)} objects)",
            o.how,
            detail,
            tuple(dict.fromkeys(s.replace(n, f"`{o.name}`") for n, w in said for s in w.recompiles)),
            tuple(dict.fromkeys(s.replace(n, f"`{o.name}`") for n, w in said for s in w.no_recompile)),
            **common,
        )
    if o.kind == "values":
        shown = [_setting(o.name, m, w) for m, w in zip(o.members, members, strict=True)]
        return ObjectWords(
            f"`{o.name}`: {o.count} values",
            o.how,
            "baked in: " + _listed(shown, ", "),
            (f"changing any of these values of `{o.name}` recompiles: each is baked in",),
            (),
            **common,
        )
    if o.kind == "code":
        return ObjectWords(
            f"{o.count} objects",
            o.how,
            f"read by `{o.name}`'s own code, which never recompiled here (--full lists them)",
            ("changing one of them recompiles",),
            (),
            **common,
        )
    if o.kind == "types":
        shown = [w.name for w in members]
        return ObjectWords(
            f"{o.count} objects checked by type only",
            o.how,
            _listed(shown, ", "),
            ("an object of another type in one of these places recompiles",),
            ("another instance of the same type: no recompile (only what is listed under it is checked)",),
            **common,
        )
    kinds = Counter(_internal_kind(w.name) for w in members)
    return ObjectWords(
        f"{o.count} internals of the code it calls",
        o.how,
        ", ".join(f"{k} x{n}" for k, n in kinds.most_common()) + " (e.g. " + _listed([w.name for w in members], ", ", 2) + ")",
        ("redefining, rebinding or monkeypatching one of them recompiles",),
        (),
        **common,
    )


def _setting(parent: str, o: GuardedObject, w: ObjectWords) -> str:
    value = w.detail.removeprefix("value ")
    if isinstance(o, FamilyObject):
        return f"{o.kind.removeprefix('attr:')} x{o.count} {value}"
    return f"{o.name.removeprefix(parent).removeprefix('.')} {value}"


def _internal_kind(name: str) -> str:
    for marker, kind in (
        ("__defaults__", "defaults"),
        ("__kwdefaults__", "defaults"),
        ("<closure>", "closure cells"),
        ("__class__", "classes"),
        ("__name__", "names"),
        ("__qualname__", "names"),
        ("__code__", "code"),
    ):
        if marker in name:
            return kind
    return "module attributes and globals"


def _listed(items: list[str], sep: str, shown: int = _SHOWN) -> str:
    head = sep.join(items[:shown])
    return head + (f"{sep}... ({len(items) - shown} more)" if len(items) > shown else "")
