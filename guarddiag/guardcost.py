"""What a function's guards cost: per cache entry, how many and where from, torch's measurement of a check
of them, and what a call can pay for them (pure: facts of the model in, facts out; words in ``render``).

torch keeps a function's cache entries in a list, most recently hit first (``extra_state.cpp``: a call walks
the list, runs each entry's guard tree until one passes, and moves that entry to the front; a new entry goes
to the front). A call that hits the front entry checks one tree; one that hits the last checks every tree,
each failing one up to its first failing guard; a call that hits none checks them all and compiles. So a
call pays at least one tree (the cheapest entry's, whole) and at most every entry's, and that range is
what :class:`CallCost` holds: derived from torch's compile-time measurement, not measured per call.

torch measures a tree once, when it installs the entry, after flushing the CPU cache (``guards.py``:
``profile_guard_manager(..., 1)``): a cold check, noisy from run to run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from guarddiag.ids import CompileId
from guarddiag.model import EntryGuards, FunctionSummary, GuardOrigin, TorchMetrics

# Origins a listing is summed up by: the few objects that hold most of its guards.
ORIGINS = 4
# An object whose one part holds this share of its guards is described by that part instead.
_DOMINANT = 2 / 3
# An object with at least this many items (``self.layers.0`` ... ``.47``) is a container of alike items.
_CONTAINER = 3

# One step of a source torch names an object by: its root (``L['self']``, ``G['torch']``), then a module,
# parameter or buffer of an nn.Module, an item (``['key']``, ``[3]``), or an attribute.
_ROOT = re.compile(r"(?:L|G)\['[^']*'\]|[A-Za-z_]\w*")
_INNER = re.compile(r"(?:L|G)\['[^']*'\](?:\.\w+|\[[^\]]*\])*")
_STEP = re.compile(r"\._(?:modules|parameters|buffers)\['(?P<member>[^']*)'\]|\[(?P<item>[^\]]*)\]|\.(?P<attr>[A-Za-z_]\w*)")


@dataclass(frozen=True)
class EntryCost:
    """One cache entry's guards: the listing's view (``listed``) and torch's own figures for the compile
    that installed it (``torch``), either None where the log or the run had none."""

    compile_id: CompileId | None
    listed: EntryGuards | None
    torch: TorchMetrics | None

    @property
    def latency_us(self) -> float | None:
        """torch's compile-time measurement of a check of the entry's guards: the log's (two decimals) over
        the compile metrics' (whole microseconds), which are the same measurement."""
        if self.listed is not None and self.listed.latency_us is not None:
            return self.listed.latency_us
        return self.torch.guard_latency_us if self.torch is not None else None

    @property
    def torch_guards(self) -> int | None:
        """torch's ``guard_count``: the guards it built the entry's tree from (not the tree's leaves)."""
        return self.torch.guard_count if self.torch is not None else None

    @property
    def leaves(self) -> int | None:
        return self.listed.leaves if self.listed is not None else None


@dataclass(frozen=True)
class CallCost:
    """What one call of the function pays for its guards, from torch's compile-time figures: ``low_us`` when
    it hits the entry it hit last (the cheapest entry's whole tree), ``high_us`` when it walks every entry
    (each entry's whole tree: an upper bound, since a failing tree stops at its first failing guard);
    ``entries`` the cache entries a call can walk; ``measured`` how many of them torch measured."""

    entries: int
    measured: int
    low_us: float
    high_us: float


@dataclass(frozen=True)
class GuardCost:
    """A function's guards: each cache entry it installed (compile order), and what a call pays for them."""

    entries: tuple[EntryCost, ...]
    per_call: CallCost | None

    @property
    def last(self) -> EntryCost | None:
        return self.entries[-1] if self.entries else None

    @property
    def live(self) -> tuple[EntryCost, ...]:
        """The entries a call walks (those ``per_call`` is over)."""
        return tuple(_live(self.entries))


def guard_cost(f: FunctionSummary) -> GuardCost | None:
    """The function's guard cost as far as its listings and torch's figures tell; None when neither says
    anything (a log without the ``guards`` channel, a torch that kept no figures)."""
    # One entry per compile: only one attempt of it installs code (torch's record names the compile, its
    # listing the attempt: ``0/1`` and ``0/1_1`` after a graph break restarted the analysis).
    listed = {e.compile_id.first_attempt: e for e in f.guard_entries if e.compile_id is not None}
    figures = {m.compile_id.first_attempt: m for m in f.torch_metrics if m.compile_id is not None and _installed(m)}
    ids = list(dict.fromkeys([*listed, *figures]))
    entries = tuple(EntryCost(cid, listed.get(cid), figures.get(cid)) for cid in ids)
    entries += tuple(EntryCost(None, e, None) for e in f.guard_entries if e.compile_id is None)
    entries += tuple(EntryCost(None, None, m) for m in f.torch_metrics if m.compile_id is None and _installed(m))
    if not entries:
        return None
    entries = tuple(sorted(entries, key=_compile_order))
    return GuardCost(entries, _per_call(_live(entries)))


def _installed(m: TorchMetrics) -> bool:
    return m.guard_count is not None or m.guard_latency_us is not None


def _compile_order(e: EntryCost) -> tuple:
    cid = e.compile_id
    if cid is None:
        return (1, 0, "", 0, 0)
    return (0, cid.frame_id.generation, str(cid.frame_id), cid.number, cid.attempt)


def _live(entries: Sequence[EntryCost]) -> list[EntryCost]:
    """The entries a call walks: those of the code object that compiled last (in its last cache generation:
    ``torch._dynamo.reset()`` drops the others; another code object of the function has a cache of its own)."""
    last = entries[-1].compile_id if entries else None
    if last is None:
        return list(entries)
    return [e for e in entries if e.compile_id is not None and e.compile_id.frame_id == last.frame_id]


def _per_call(entries: Sequence[EntryCost]) -> CallCost | None:
    figures = [e.latency_us for e in entries if e.latency_us is not None]
    if not figures:
        return None
    return CallCost(len(entries), len(figures), min(figures), sum(figures))


def cost_dicts(costs: Iterable[tuple[FunctionSummary, GuardCost]]) -> list[dict[str, object]]:
    """The JSON form (a run record's ``guard_cost``, derived from its functions like ``totals``) of each function's
    guard cost: the cache entries a call walks, how many torch timed, the least and most a call pays (microseconds,
    from torch's compile-time figures), and its last entry's guards."""
    out = []
    for f, cost in costs:
        last, call = cost.last, cost.per_call
        out.append(
            {
                "function": {"name": f.name, "file": f.file, "line": f.line, "frame_ids": [str(i) for i in f.frame_ids]},
                "entries": len(cost.entries),
                "per_call": None
                if call is None
                else {"entries": call.entries, "timed": call.measured, "low_us": call.low_us, "high_us": call.high_us},
                "last_entry": None
                if last is None
                else {
                    "compile_id": None if last.compile_id is None else str(last.compile_id),
                    "leaves": last.leaves,
                    "torch_guard_count": last.torch_guards,
                    "latency_us": last.latency_us,
                },
            }
        )
    return out


def origins(owners: Iterable[tuple[str, int]], top: int = ORIGINS) -> tuple[GuardOrigin, ...]:
    """The few objects that hold most of a listing's leaf guards, from the leaves under each manager's source
    (``GuardOwners``): each top-level object of the frame, narrowed to its one part holding most of its guards
    while there is one (``self`` -> ``self.layers``), with the rest of it after; largest first, ``top`` at most."""
    tree = _Tree()
    for source, count in owners:
        tree.add(_steps(source), count)
    rows: list[GuardOrigin] = []
    for root in tree.children.values():
        rows.extend(root.described())
    rows.sort(key=lambda o: -o.guards)
    return tuple(rows[:top])


def _steps(source: str) -> list[tuple[str, bool]]:
    """A source cut into (torch's text of the step, whether it is an item of a container): ``L['self']``,
    ``._modules['layers']``, ``._modules['3']`` (an item). A source of another shape (a call, ``type(...)``)
    is one step."""
    if not source:
        return [("", False)]
    if not source.startswith(("L[", "G[")):
        # ``dict(type(L['self'].config).__dict__)['attribute_map']``, ``type(L['x'])``: the object inside it.
        inner = _INNER.search(source)
        if inner is None:
            return [(source, False)]
        source = inner.group()
    m = _ROOT.match(source)
    if m is None:
        return [(source, False)]
    steps = [(m.group(), False)]
    at = m.end()
    while at < len(source):
        s = _STEP.match(source, at)
        if s is None:
            steps.append((source[at:], False))
            break
        key = s["member"] if s["member"] is not None else s["item"]
        steps.append((s.group(), key is not None and key.strip("'").isdigit()))
        at = s.end()
    return steps


class _Tree:
    """Leaf guards summed by source prefix."""

    __slots__ = ("children", "guards", "item", "source")

    def __init__(self, source: str = "", item: bool = False) -> None:
        self.source, self.item = source, item
        self.guards = 0
        self.children: dict[str, _Tree] = {}

    def add(self, steps: list[tuple[str, bool]], count: int) -> None:
        node = self
        node.guards += count
        for text, item in steps:
            child = node.children.get(text)
            if child is None:
                child = node.children[text] = _Tree(node.source + text, item)
            child.guards += count
            node = child

    def described(self) -> list[GuardOrigin]:
        """This object's origin rows: itself, or the part of it holding most of its guards and the rest."""
        node, rest_of = self, None
        while node.children:
            big = max(node.children.values(), key=lambda c: c.guards)
            if big.guards < _DOMINANT * node.guards:
                break
            if rest_of is None:
                rest_of = self
            node = big
        rows = [GuardOrigin(node.source, node.guards, node.members())]
        if rest_of is not None and self.guards > node.guards:
            rows.append(GuardOrigin(self.source, self.guards - node.guards, None, rest=True))
        return rows

    def members(self) -> int | None:
        items = sum(1 for c in self.children.values() if c.item)
        return items if items >= _CONTAINER else None
