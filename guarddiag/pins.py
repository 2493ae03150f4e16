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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from guarddiag.causes import cause_from_changed_guard, keys_cause
from guarddiag.guardexpr import as_source, first_source, key_pin, size_guard_holds, tensor_change, tensor_fields
from guarddiag.guardkinds import PINNING_KINDS, Category, failure_kind
from guarddiag.ids import CompileId
from guarddiag.logparse.events import GuardListing
from guarddiag.model import Cause, DictKeys, DynamicDims, Guard, RecompileEvent

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
    that a recompile can say which field of the tensor changed (its dtype, requires_grad, a dim's size);
    the dicts whose keys it pins keep them (source -> keys in order), so that a recompile can say which
    key came or went."""

    values: dict[int, int]
    tensors: dict[int, str]
    keys: dict[str, DictKeys]
    # Its symbolic-shape guards (``(L['x'].size()[1] % 16) == 0``): a dynamic entry pins no size, it bounds them.
    sizes: tuple[str, ...] = ()


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


def size_guards(listing: GuardListing) -> tuple[str, ...]:
    """A listing's symbolic-shape guards over sizes (``0 <= L['x'].size()[1] <= 64``), as torch printed them."""
    exprs = [(g.kind, g.expr) for g in listing.guards]
    exprs += [(kind, (rest[:cut] if (cut := rest.find("  # ")) >= 0 else rest).strip()) for kind, rest in listing.raw]
    return tuple(sys.intern(expr) for kind, expr in exprs if kind == SPECIALIZED and ".size()" in expr and not _SPECIALIZED.match(expr))


def hashed(pins: HashedPins, sizes: tuple[str, ...] = ()) -> Entry:
    """A compile's :class:`Entry`; ``sizes``: its listing's :func:`size_guards`."""
    # Interned: the same check with the same shapes, compile after compile, is kept once.
    tensors = {
        what: sys.intern(expr)
        for what, _, kind, expr in pins
        if kind == "TENSOR_MATCH" and "._parameters[" not in expr and "._buffers[" not in expr
    }
    return Entry({what: value for what, value, _, _ in pins}, tensors, _dict_keys(pins), sizes)


def _dict_keys(pins: HashedPins) -> dict[str, DictKeys]:
    """The keys of each dict whose keys the pins name, in order (a key per index, or all at once)."""
    at: dict[str, dict[int, str]] = {}
    whole: dict[str, DictKeys] = {}
    for _, _, kind, expr in pins:
        pin = key_pin(expr) if kind in _KEY_PIN_KINDS else None
        if pin is None:
            continue
        if pin.index is None:
            whole[pin.source] = DictKeys(pin.keys, None, pin.ordered)
        else:
            at.setdefault(pin.source, {})[pin.index] = pin.keys[0]
    for src, keys in at.items():
        # Keys checked one by one are checked up to the dict's length (DictGuardManager checks it): all of them.
        whole.setdefault(src, DictKeys(tuple(keys[i] for i in sorted(keys))))
    return whole


# The kinds a listing pins a dict's keys under: one key at a time (EQUALS_MATCH), or all (DICT_KEYS, DICT_KEYS_MATCH).
_KEY_PIN_KINDS = frozenset({"EQUALS_MATCH", "DICT_KEYS", "DICT_KEYS_MATCH"})
# What changed against an entry, kept per entry torch printed: at most this many of the things (by what they check).
MAX_CHANGED_KEPT = 16


class Changes(NamedTuple):
    """What a new compile pinned otherwise than one earlier entry: how many values, the first few of
    them by what they check (hashed, as :class:`Entry` keys them), and the first of them as the new
    compile's guards, each with what changed in it where the entry kept the expression (an input
    tensor's ``size at dim 0``), else ``""``."""

    count: int
    whats: tuple[int, ...]
    first: tuple[tuple[Guard, str], ...]


def changed(entry: Entry, now: HashedPins) -> Changes:
    """What a new compile (its pins) changed against an earlier entry; outermost objects first."""
    values = entry.values
    # One thing a listing pins twice (a shape environment's specialization listed once per use) is one change.
    unique = {what: (what, kind, expr) for what, value, kind, expr in now if (was := values.get(what)) is not None and was != value}
    found = sorted(unique.values(), key=lambda pin: (len(first_source(pin[2])), pin[2]))
    first = found[: MAX_INFERRED_CAUSES + 1]
    return Changes(
        len(found),
        tuple(what for what, _, _ in found[:MAX_CHANGED_KEPT]),
        tuple((_guard((kind, expr)), _tensor_change(entry, what, expr)) for what, kind, expr in first),
    )


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


class Variety:
    """How many distinct values a frame's entries pinned for one thing, each thing counted once: a thing that
    takes many values (a float hyperparameter set each epoch) explains more compiles than one that takes two
    (grad mode). Counted over every entry of the frame, later ones too, when the run is read whole."""

    def __init__(self, entries: Mapping[int, Entry]) -> None:
        self._entries = entries
        self._known: dict[int, int] = {}

    def __call__(self, what: int) -> int:
        known = self._known.get(what)
        if known is None:
            known = self._known[what] = len({v for e in self._entries.values() if (v := e.values.get(what)) is not None})
        return known


def entry_numbers(cache_entries: Sequence[CompileId | None], earlier: Iterable[int]) -> tuple[int | None, ...]:
    """The entry each of a recompile's reasons is against: the compile number torch names (``0/1:``), or,
    where no reason names one (torch < 2.5) and there are as many reasons as earlier entries, by position
    (torch prints the newest entry first); None where neither tells. ``earlier``: the frame's listed
    compiles before this one, read only where no reason names its entry."""
    named = [e.number if e is not None else None for e in cache_entries]
    # A reason that names its entry (torch >= 2.5) needs no list of the earlier ones: building it for each of
    # a frame's thousands of compiles made their parse quadratic in their number.
    if not named or any(n is not None for n in named):
        return tuple(named)
    listed = list(earlier)
    return tuple(named) if len(cache_entries) != len(listed) else tuple(sorted(listed, reverse=True))


def decisive(
    event: RecompileEvent,
    changed: Mapping[int, Changes],
    roles: Mapping[str, str],
    entries: Mapping[int, Entry] | None = None,
    number: int | None = None,
    against: Sequence[int | None] | None = None,
    variety: Variety | None = None,
    sizes: Mapping[str, int] | None = None,
) -> RecompileEvent:
    """The cause against the entry that would otherwise have matched first, and what else changed
    against that entry: the entry with the fewest pinned values changed; among equals, the one with the
    fewest size guards the call broke (``sizes``: the new compile's sizes by source, which torch made its
    symbols for: a size of 80 breaks ``% 16 != 0`` and ``<= 64`` of one entry, only ``<= 64`` of another,
    while torch names one failing guard per entry); then the one whose
    changed value is the frame's most varied (``entries``: each compile's :class:`Entry`; a tie between an
    eval entry that differs in grad mode and a train entry that differs in a per-epoch float is the float's);
    then torch's order (newest first). ``number``: the new compile's, whose listing says the dict keys now;
    ``against``: the entry of each cause (:func:`entry_numbers`), else the one each names; ``variety``: the
    frame's, shared by its recompiles."""
    if not changed:
        return event
    entries = entries or {}
    variety = variety or Variety(entries)
    against = tuple(against) if against is not None else entry_numbers([c.cache_entry for c in event.causes], ())

    def changes(i: int) -> int:
        found = changed.get(against[i]) if against[i] is not None else None  # type: ignore[arg-type]
        return found.count if found is not None else 1 << 30

    def varied(i: int) -> int:
        found = changed.get(against[i]) if against[i] is not None else None  # type: ignore[arg-type]
        return max((variety(w) for w in found.whats), default=0) if found is not None else 0

    def broken(i: int) -> int:
        entry = entries.get(against[i]) if against[i] is not None else None  # type: ignore[arg-type]
        if entry is None or not sizes:
            return 0
        return sum(size_guard_holds(expr, dict(sizes)) is False for expr in entry.sizes)

    # Size guards and variety are asked only of the entries that tie for the fewest changes.
    counts = [changes(i) for i in range(len(event.causes))]
    fewest = min(counts)
    ties = [i for i in range(len(event.causes)) if counts[i] == fewest]
    breaks = {i: broken(i) for i in ties} if len(ties) > 1 else {}
    order = sorted(
        range(len(event.causes)),
        key=lambda i: (counts[i], breaks.get(i, 0), -varied(i) if counts[i] == fewest else 0, i),
    )
    causes = tuple(event.causes[i] for i in order)
    at = against[order[0]]
    guards = changed[at].first if at is not None and at in changed else ()
    now = entries.get(number) if number is not None else None
    first = _with_keys(causes[0], entries.get(at) if at is not None else None, now, roles)
    also = _distinct(
        c
        for c in (cause_from_changed_guard(g, g, roles, what) for g, what in guards)
        if not _same_object(c, first)
    )[:MAX_INFERRED_CAUSES]
    return RecompileEvent(event.compile_id, event.logged, (first, *causes[1:]), also)


def _distinct(causes: Iterable[Cause]) -> tuple[Cause, ...]:
    """One cause per object: a dict's keys changed at two indexes are one change of its keys."""
    seen: set[tuple[str, object]] = set()
    out = []
    for c in causes:
        key = (c.category, as_source(c.source) if c.source else c.key)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return tuple(out)


def _with_keys(cause: Cause, entry: Entry | None, now: Entry | None, roles: Mapping[str, str]) -> Cause:
    """A container cause on a dict whose keys the entry's listing names is a change of its keys (torch checks
    a dict's length first: ``len(d) == 2`` fails where a key came or went): said with the keys before and,
    where the new compile's listing tells, after."""
    if cause.category != Category.CONTAINER or entry is None or not cause.source:
        return cause
    src = as_source(cause.source)
    before = entry.keys.get(src)
    if before is None:
        return cause
    after = now.keys.get(src) if now is not None else None
    keys = DictKeys(before.before, after.before if after is not None else None, before.ordered and (after is None or after.ordered))
    return keys_cause(cause, keys, roles)


def refused_cause(
    causes: tuple[Cause, ...],
    entries: Mapping[int, Entry],
    roles: Mapping[str, str],
    variety: Variety | None = None,
    number: int | None = None,
) -> Cause | None:
    """:func:`decisive_refused`, a dict's keys said as for a recompile (those of the entry; the call's are not
    listed). The refused call (``number``, where the log names it) comes after the entries before it: reasons
    that name no entry are matched to those by position."""
    against = entry_numbers([c.cache_entry for c in causes], sorted(n for n in entries if number is None or n < number))
    found = decisive_refused(causes, entries, against, variety or Variety(entries))
    if found is None:
        return None
    at = against[found]
    return _with_keys(causes[found], entries.get(at) if at is not None else None, None, roles)


# A refused call's reasons weighed against each other, at most (each against every other: a frame whose limit
# was raised to thousands falls back to torch's last reason rather than take quadratic time).
MAX_REFUSED_REASONS = 256


def decisive_refused(
    causes: tuple[Cause, ...], entries: Mapping[int, Entry], against: Sequence[int | None], variety: Callable[[int], int]
) -> int | None:
    """Which reason (its index) is the cause that matters for a call refused at the recompile limit: the call
    has no listing of its own, so which entry it differs from least is read from torch's reasons. Each reason says what the call changed
    against one entry; supposing the call were that entry with only that changed, every other entry's
    reason must name something in which that entry differs from it (else the supposition is refuted).
    Among the suppositions that stand, the same order as for a recompile: no pinned value changed
    (a size guard) before one, the most varied thing, torch's order. None when none stands or the
    entries are not known (or there are more than :data:`MAX_REFUSED_REASONS`): the caller keeps torch's last reason."""
    if len(causes) > MAX_REFUSED_REASONS:
        return None
    suppose = [(entries.get(n) if n is not None else None, _whats_of(c)) for c, n in zip(causes, against, strict=True)]
    standing = []
    for i, (entry, whats) in enumerate(suppose):
        what = None if whats is None or entry is None else next((w for w in whats if w in entry.values), _UNKNOWN)
        if entry is None or what == _UNKNOWN:
            continue
        if not any(_refutes(entry, what, other, other_whats) for j, (other, other_whats) in enumerate(suppose) if j != i):
            rank = (0, 0) if what is None else (1, -variety(what))
            standing.append((*rank, i))
    return min(standing)[2] if standing else None


def _refutes(entry: Entry, what: int | None, other: Entry | None, other_whats: tuple[int, ...] | None) -> bool:
    """Whether another entry's reason refutes "the call is ``entry`` with only ``what`` changed": it names a
    thing other than ``what`` that ``entry`` pinned to the value the other entry pinned (the call then had it)."""
    if other is None or not other_whats:
        return False
    for w in other_whats:
        mine, theirs = entry.values.get(w), other.values.get(w)
        if mine is not None and theirs is not None:
            return w != what and mine == theirs
    return False


# The hash no pinned thing has: a reason whose pinned thing cannot be named makes no supposition.
_UNKNOWN = -1


def _whats_of(c: Cause) -> tuple[int, ...] | None:
    """What a reason's failing guard checks, hashed as :class:`Entry` keys it (a few spellings a listing may
    pin it under); None for a guard that pins no value (a size guard, a dict's version), ``()`` for one this
    reader cannot key."""
    found = failure_kind(c.guard) if c.guard else None
    if found is None:
        return None if c.category == Category.DYNAMIC_SHAPE else ()
    row = found[0]
    if row.name == "GLOBAL_STATE":
        return (hash(_what("GLOBAL_STATE", "___check_global_state()")),)
    if not row.pins:
        return None
    if not c.source:
        return ()
    src = as_source(c.source)
    if row.name == "TENSOR_MATCH":
        return (hash(("TENSOR_MATCH", f"check_tensor({src}")),)
    # The failure text in a listing's spelling: its object named as listings name it (torch >= 2.6 prints it bare).
    expr = c.guard.replace(c.source, src, 1) if c.source in c.guard else c.guard
    return tuple(dict.fromkeys(hash(_what(k, expr)) for k in (row.name, "EQUALS_MATCH")))


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
