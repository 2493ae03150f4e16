"""Grouping a listing's facts into objects: one row per object, large families collapsed.

Each guard of a listing is read into a fact (:mod:`guarddiag.explain.facts`); facts are grouped
by the object in the user's terms (argument ``m``, ``m.lin.weight``, global ``FLAG``, ``d['a']``),
and large families (parameters, submodules, per-layer attributes) collapse into one row each.
An object without a guard is not checked at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from guarddiag.explain import facts as F
from guarddiag.explain.facts import Fact, read_guard
from guarddiag.explain.model import CallablesObject, FamilyObject, GuardedObject, IdentityObject
from guarddiag.explain.rows import Index, Node, row
from guarddiag.model import Guard


class Memo:
    """What one function's listings have in common, worked out once.

    Each cache entry of a function lists its guards anew, and entry after entry they are mostly the
    same: each guard is read (:func:`read_guard`) once per function, and each object's row made
    once for the same facts and the same answers from :class:`Index`. A hit gives exactly what
    the work would have given: guards are keyed by all that is read of them, rows by their
    source, their facts (the very objects, which ``steps`` keeps alive) and ``roles``.
    """

    def __init__(self) -> None:
        self.steps: dict[tuple[str, str, str], tuple[str, Fact | F.Ambient] | None] = {}
        # The same, by the guard object: a parser without locations gives a line read before the same
        # Guard in every listing, kept alive by the listings while the memo lives.
        self.steps_by_guard: dict[int, tuple[str, Fact | F.Ambient] | None] = {}
        self.families: dict[str, tuple[str, str] | None] = {}
        self.rows: dict[tuple[str, tuple[int, ...]], tuple[GuardedObject | None, tuple[tuple[str, str, object], ...]]] = {}
        self.roles: Mapping[str, str] | None = None
        self.key_steps: dict[str, tuple[tuple[str, str], ...]] = {}
        self.last_keys: tuple[tuple[str, ...], dict[str, set[str]]] | None = None

    def row(self, node: Node, index: Index, roles: Mapping[str, str]) -> GuardedObject | None:
        """The row of ``node`` (``None``: it has none), reused from an earlier listing where it cannot differ."""
        if roles is not self.roles:
            self.rows.clear()
            self.roles = roles
        key = (node.src, tuple(map(id, node.facts)))
        known = self.rows.get(key)
        if known is not None and index.answers(known[1]):
            return known[0]
        index.asked = []
        try:
            made = row(node, index, roles)
            asked = tuple(index.asked)
        finally:
            index.asked = None
        self.rows[key] = (made, asked)
        return made

    def family(self, src: str) -> tuple[str, str] | None:
        if src in self.families:
            return self.families[src]
        fam = self.families[src] = _family(src)
        return fam


def objects_of(
    guards: Iterable[Guard], roles: Mapping[str, str], full: bool = False, memo: Memo | None = None
) -> tuple[tuple[GuardedObject, ...], tuple[F.Ambient, ...]]:
    """The guard model of one listing: one row per object (families collapsed unless ``full``), and the ambient state.

    ``memo``: shared by the listings of one function (same ``roles``), so that they are read once.
    """
    memo = memo if memo is not None else Memo()
    nodes, ambient = _nodes(guards, memo)
    attach_shapes(nodes)
    rows: list[GuardedObject] = []
    families: dict[tuple[str, str], list[GuardedObject]] = {}
    callables: list[IdentityObject] = []
    index = Index(nodes, memo.key_steps, memo.last_keys)
    for src, node in nodes.items():
        made = memo.row(node, index, roles)
        if made is None:
            continue
        if isinstance(made, IdentityObject) and made.how == "identity (code)":
            callables.append(made)
            continue
        fam = None if full else memo.family(src)
        if fam is not None:
            families.setdefault(fam, []).append(made)
        else:
            rows.append(made)
    memo.last_keys = index.last_keys
    for (root, kind), members in families.items():
        rows.append(members[0] if len(members) == 1 and kind != "parameters" else _collapse(root, kind, members))
    if callables:
        rows.append(_callables(callables))
    rows.sort(key=_row_order)
    return tuple(rows), tuple(ambient)


def _row_order(made: GuardedObject) -> tuple[int, str]:
    # Arguments and their contents first, then globals, then the collapsed families and callables.
    rank = 3 if made.how == "identity (code)" else 2 if made.count > 1 else 0
    return rank, made.sources[0] if made.sources else made.name


_UNREAD: Any = object()  # a guard not read yet (None is a guard that goes nowhere)


def _nodes(guards: Iterable[Guard], memo: Memo) -> tuple[dict[str, Node], list[F.Ambient]]:
    """Facts by source (module internals folded into their owner), and the ambient state in order."""
    steps, by_guard = memo.steps, memo.steps_by_guard
    nodes: dict[str, Node] = {}
    ambient: list[F.Ambient] = []
    for g in guards:
        step = by_guard.get(id(g), _UNREAD)
        if step is _UNREAD:
            key = (g.kind, g.expr, g.source)  # all that read_guard reads of a guard
            step = steps.get(key, _UNREAD)
            if step is _UNREAD:
                step = steps[key] = _step(g)
            by_guard[id(g)] = step
        if step is None:
            continue
        src, what = step
        if isinstance(what, Fact):
            node = nodes.get(src)
            if node is None:
                nodes[src] = Node(src, [what])
            else:
                node.facts.append(what)
        elif what not in ambient:
            ambient.append(what)
    return nodes, ambient


def _step(g: Guard) -> tuple[str, Fact | F.Ambient] | None:
    """Where a guard goes: ``None`` (nowhere), ``("", state)`` (ambient state) or ``(source, fact)``."""
    fact = read_guard(g)
    if fact is None:
        return None
    if fact.how == "ambient":
        return "", F.ambient_of(g)
    if F.INTERNAL_GLOBAL.match(fact.source or "x") and not F.BUILTIN.match(fact.source):
        internal = _internal(fact.source, fact.how)
        return ("", internal) if internal is not None else None
    src = fact.source
    if fact.how == "type" and F.MODULE_INTERNALS.search(src):
        return None  # the dicts inside an nn.Module: implementation detail, never a user's change
    if fact.how == "contains" and src.endswith(".__dict__"):
        src = src.removesuffix(".__dict__")
    if fact.how in ("key", "keys") and src.endswith("._modules"):
        src = src.removesuffix("._modules")
        fact = Fact(src, "submodule_" + fact.how, fact.value, fact.extra)
    return src, fact


def _internal(src: str, how: str) -> F.Ambient | None:
    """The state a guard on one of torch's own globals checks (None: none worth listing)."""
    if "_global_" in src and "hooks" in src:
        # torch 2.13 checks only the type of its global hook dicts: a global hook added later neither
        # recompiles nor runs in compiled code, so nothing is listed; 2.4 checks that they are empty.
        # A module's own hooks are not checked under torch's default skip_nnmodule_hook_guards=True.
        return None if how == "type" else F.Ambient("MODULE_GLOBAL_HOOKS")
    return F.Ambient("TORCH_INTERNALS")


def _family(src: str) -> tuple[str, str] | None:
    """The family a nested object collapses into: (root, kind), e.g. ``("m", "parameters")``."""
    root = F.root(src)
    if "._" in src and F.PARAM.search(src) is not None:
        return root, "buffers" if "._buffers[" in src else "parameters"
    if "._modules[" in src and F.SUBMODULE.search(src) is not None:
        return root, "submodules"
    m = F.SUBMODULE_ATTR.search(src) if "._modules[" in src else None
    if m is not None:
        return root, f"attr:{m['attr']}"
    if src.endswith(".training"):
        return root, "attr:training"
    return None


def _collapse(root: str, kind: str, members: list[GuardedObject]) -> FamilyObject:
    """One row for a family: ``300 parameters under `m```."""
    if kind in ("parameters", "buffers"):
        how = "tensor metadata"
    elif kind == "submodules":
        how = "identity" if Counter(m.how for m in members).most_common(1)[0][0] == "identity" else "type"
    else:
        how = members[0].how
    return FamilyObject(
        root, kind, how, tuple(members), len(members), tuple(s for m in members for s in m.sources), "|".join(m.pinned for m in members)
    )


def _callables(rows: list[IdentityObject]) -> CallablesObject:
    return CallablesObject(
        tuple(rows), "identity (code)", len(rows), tuple(s for r in rows for s in r.sources), "|".join(r.pinned for r in rows)
    )


def attach_shapes(nodes: dict[str, Node]) -> None:
    """Shape-env guards (``2 <= L['x'].size()[0]``) belong to the tensors they mention."""
    # What each owner already holds, as keys: ``fact not in owner.facts`` scans a list that grows
    # with every relation a tensor takes part in, quadratic for a tensor related to many others.
    held: dict[int, set[tuple[str, str, str, tuple[tuple[str, str], ...]]]] = {}

    def attach(owner: Node, fact: Fact) -> None:
        keys = held.get(id(owner))
        if keys is None:
            keys = held[id(owner)] = {_fact_key(f) for f in owner.facts}
        key = _fact_key(fact)
        if key not in keys:
            keys.add(key)
            owner.facts.append(fact)

    for node in list(nodes.values()):
        shapes = node.of("shape")
        for fact in shapes:
            for m in F.SIZE_TERM.finditer(fact.value):
                owner = nodes.get(m["src"])
                if owner is not None and owner is not node:
                    attach(owner, fact)
        if shapes and not node.of("tensor") and node.src.endswith(".size"):
            owner = nodes.get(node.src.removesuffix(".size"))
            if owner is not None:
                for fact in shapes:
                    attach(owner, fact)


def _fact_key(f: Fact) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """What makes two facts equal (``==`` on the dataclass), hashable."""
    return f.source, f.how, f.value, tuple(sorted(f.extra.items()))


