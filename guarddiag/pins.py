"""What each compile of a frame pinned, and what a recompile changed against each cache entry.

A pinning guard fixes one value (``L['n'] == 3``, an object's id, a tensor's metadata, global state);
two compiles of one frame that pin one check differently differ there. build.py uses this twice: to
infer the cause of a recompile torch did not announce (the previous listing against the new one), and
to find the decisive cause of an announced one: torch prints each failing entry's first failing guard,
newest entry first, and the cause that matters is the one against the entry that would otherwise have
matched (the fewest values changed against it). Entries are kept hashed (what -> value): a big model's
recompiling frame pins thousands of values per compile.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from guarddiag.causes import cause_from_changed_guard
from guarddiag.guardexpr import as_source, first_source, tensor_change, tensor_fields
from guarddiag.guardkinds import PINNING_KINDS
from guarddiag.ids import CompileId
from guarddiag.logparse.events import GuardListing
from guarddiag.model import Cause, DynamicDims, Guard, RecompileEvent

# Causes inferred from changed guards, at most.
MAX_INFERRED_CAUSES = 5


# A pinned guard by what it checks, its value cut off: (family, expression without the value) -> (kind, expression).
Pins = dict[tuple[str, str], tuple[str, str]]


def pinned(listing: GuardListing) -> Pins:
    """A listing's pinned values by what they check."""
    return {_what(kind, expr): (kind, expr) for kind, expr in _pinned_exprs(listing)}


def _pinned_exprs(listing: GuardListing) -> Iterator[tuple[str, str]]:
    """(kind, expression) of each pinning guard, read off the raw lines without building guards (every
    compile of a recompiling frame is read so: one pass of string cuts). A symbolic number specialized
    to one value (``LAMBDA_GUARD: L['n'] == 3``, torch's shape environment after automatic dynamic) pins
    it as an ``EQUALS_MATCH`` would."""
    for g in listing.guards:
        pin = _pin(g.kind, g.expr)
        if pin is not None:
            yield pin
    for kind, rest in listing.raw:
        if kind in PINNING_KINDS or kind == SPECIALIZED:
            cut = rest.find("  # ")
            pin = _pin(kind, (rest[:cut] if cut >= 0 else rest).strip())
            if pin is not None:
                yield pin


def _pin(kind: str, expr: str) -> tuple[str, str] | None:
    """(kind, expression) of a guard that pins a value, None for one that does not."""
    if kind in PINNING_KINDS:
        return kind, expr
    if kind == SPECIALIZED and _SPECIALIZED.match(expr):
        return "EQUALS_MATCH", expr
    return None


# The guard kind a shape environment's guards are listed as, and one that specializes a number.
SPECIALIZED = "LAMBDA_GUARD"
_SPECIALIZED = re.compile(r"^[LG]\[[^\]]+\](?:\.\w+|\[[^\]]+\])* == -?[\d.]+(?:e[+-]?\d+)?$")


# A compile's pinned values hashed: (hash of what is checked, hash of the value, kind, expression).
HashedPins = list[tuple[int, int, str, str]]


def hashed_pins(listing: GuardListing) -> HashedPins:
    return [(hash(_what(kind, expr)), hash(expr), kind, expr) for kind, expr in _pinned_exprs(listing)]


class Entry(NamedTuple):
    """What a cache entry pinned, kept small: a recompile later asks only which values differ. The
    tensor checks of inputs (not parameters or buffers, a model's thousands) keep their expression, so
    that a recompile can say which field of the tensor changed (its dtype, requires_grad, a dim's size)."""

    values: dict[int, int]
    tensors: dict[int, str]


_PIN_FAMILY = {k: "value" for k in ("EQUALS_MATCH", "CONSTANT_MATCH", "TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH")}


def _what(kind: str, expr: str) -> tuple[str, str]:
    """What a pinning guard checks, its value cut off. ``x == True`` and ``x == False`` are two kinds
    (TRUE_MATCH, FALSE_MATCH) of one check, the value of ``x``."""
    return _PIN_FAMILY.get(kind, kind), _pin_key(kind, expr)


def _pin_key(kind: str, expr: str) -> str:
    """The expression without the value it pins: ``check_tensor(L['x']`` of a tensor check, ``L['n']``
    of ``L['n'] == 3``, ``len(L['xs'])`` of ``not L['xs']`` (an empty container)."""
    if kind == "TENSOR_MATCH":
        return expr[: expr.find(", ")]
    if kind in ("ID_MATCH", "TYPE_MATCH"):
        head = expr.split("), type=", 1)[0]
        return head[: head.rfind(", ")]
    if kind == "GLOBAL_STATE":
        return expr.partition(" against ")[0]
    if expr.startswith("not "):
        return f"len({expr[4:]})"
    for op in (" == ", " != ", " is not ", " is "):
        at = expr.rfind(op)
        if at > 0:
            return expr[:at]
    return expr


def _guard(pin: tuple[str, str]) -> Guard:
    kind, expr = pin
    return Guard(kind, first_source(expr), expr)


def hashed(pins: HashedPins) -> Entry:
    """A compile's :class:`Entry`."""
    # Interned: the same check with the same shapes, compile after compile, is kept once.
    tensors = {
        what: sys.intern(expr)
        for what, _, kind, expr in pins
        if kind == "TENSOR_MATCH" and "._parameters[" not in expr and "._buffers[" not in expr
    }
    return Entry({what: value for what, value, _, _ in pins}, tensors)


def changed(entry: Entry, now: HashedPins) -> tuple[int, tuple[tuple[Guard, str], ...]]:
    """How many values an entry pinned that the new compile pinned otherwise, and the first of them
    (outermost objects first), as the new compile's guards, each with what changed in it where the
    entry kept the expression (an input tensor's ``size at dim 0``), else ``""``."""
    values = entry.values
    found = [(what, kind, expr) for what, value, kind, expr in now if (was := values.get(what)) is not None and was != value]
    found.sort(key=lambda pin: (len(first_source(pin[2])), pin[2]))
    first = found[: MAX_INFERRED_CAUSES + 1]
    return len(found), tuple((_guard((kind, expr)), _tensor_change(entry, what, expr)) for what, kind, expr in first)


def _tensor_change(entry: Entry, what: int, expr: str) -> str:
    before = entry.tensors.get(what)
    return tensor_change(tensor_fields(before), tensor_fields(expr)) if before is not None else ""


def diff_listings(before: Pins, after: Pins) -> tuple[tuple[Guard, Guard], ...]:
    """Causes from guards on the same object whose pinned value changed; outermost objects first."""
    changed = [(_guard(b), _guard(a)) for key, a in after.items() if (b := before.get(key)) is not None and b[1] != a[1]]
    changed.sort(key=lambda pair: (len(pair[1].source), pair[1].source))
    kept: list[tuple[Guard, Guard]] = []
    for b, a in changed:
        # A different parent object explains every guard below it.
        if any(a.source.startswith(k.source) and k.kind == "ID_MATCH" and k.source for _, k in kept):
            continue
        kept.append((b, a))
    return tuple(kept[:MAX_INFERRED_CAUSES])


def decisive(
    event: RecompileEvent, changed: Mapping[int, tuple[int, tuple[tuple[Guard, str], ...]]], roles: Mapping[str, str]
) -> RecompileEvent:
    """The cause against the entry that would otherwise have matched first (fewest pinned values changed
    against it; torch's order, newest first, among equals), and what else changed against that entry."""
    if not changed:
        return event

    def changes(c: Cause) -> int:
        cid = CompileId.parse(c.cache_entry or "")
        return changed[cid.number][0] if cid is not None and cid.number in changed else 1 << 30

    causes = tuple(sorted(event.causes, key=changes))
    cid = CompileId.parse(causes[0].cache_entry or "")
    guards = changed[cid.number][1] if cid is not None and cid.number in changed else ()
    also = tuple(
        c
        for c in (cause_from_changed_guard(g, g, roles, what) for g, what in guards)
        if not _same_object(c, causes[0])
    )[:MAX_INFERRED_CAUSES]
    return RecompileEvent(event.compile_id, event.logged, causes, also)


def _same_object(a: Cause, b: Cause) -> bool:
    """Whether two causes name one change: the same object, or both global state."""
    if a.category == b.category == "global_state":
        return True
    return bool(a.source) and as_source(a.source) == as_source(b.source)


_NUMBER_TYPE = re.compile(r"^___check_type_id\((?P<src>.+?), \d+\), type=<class '(?:int|float)'>$")


def dynamic_scalars(pins: HashedPins, pinned_before: AbstractSet[int]) -> tuple[DynamicDims, ...]:
    """The numbers (int or float) a compile checks by type only, whose value an earlier compile of the
    frame pinned (``pinned_before``: what the frame's earlier entries pin, as :class:`Entry` keys them):
    automatic dynamic made them symbolic, and a new value reuses the entry. Each as a
    :class:`DynamicDims` without dims."""
    now = {what for what, _, _, _ in pins}
    found = []
    for _, _, kind, expr in pins:
        m = _NUMBER_TYPE.match(expr) if kind == "TYPE_MATCH" else None
        if m is None:
            continue
        value = hash(("value", m["src"]))
        if value in pinned_before and value not in now:
            found.append(DynamicDims(m["src"], ()))
    return tuple(found)


_TENSOR_SIZE = re.compile(r"^check_tensor\((?P<src>.+?), \w+, .*?size=\[(?P<size>[^\]]*)\]")


def dynamic_dims(pins: HashedPins) -> tuple[DynamicDims, ...]:
    """The tensors of a compile (its pinned values, as :func:`hashed_pins` read them) whose sizes are
    dynamic in some dims (``size=[None, 20]``): after automatic dynamic (or mark_dynamic) a new size there
    reuses the entry. Parameters and buffers are left out."""
    found = []
    for _, _, kind, expr in pins:
        if kind != "TENSOR_MATCH" or "None" not in expr:
            continue
        m = _TENSOR_SIZE.match(expr)
        if m is None or "._parameters[" in m["src"] or "._buffers[" in m["src"]:
            continue
        dims = tuple(i for i, size in enumerate(m["size"].split(", ")) if size.strip() == "None")
        if dims:
            found.append(DynamicDims(m["src"], dims))
    return tuple(found)
