"""What each function's guards cost per call, in words (the run report's guard section, every human format)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from guarddiag.flips import torch_version_tuple
from guarddiag.guardcost import GuardCost
from guarddiag.guardexpr import readable_source
from guarddiag.guardfilters import GUARD_HEAVY, SUGGESTED_FILTER, filter_config, guard_filter, version_text
from guarddiag.model import FunctionSummary, GuardOrigin, Run
from guarddiag.render.guardfilters import DROPS, GIVES_UP
from guarddiag.render.words import function_label, measured_guards_sentence, micros
from guarddiag.verdicts import compare_command

T = TypeVar("T", int, float)

# Functions the section names, costliest first; the others are counted.
SHOWN = 5
# Guards from which a function's checks are worth a line of the report (a small function's cost little per call).
MANY = 100

HEADING = (
    "guard checks: each call of a compiled function checks the guards of its cache entries, the entry it hit last first, "
    "until one holds; torch timed each entry's check when it compiled it (on 2.13 once, cold), and the cost per call here is derived "
    "from that, not measured"
)
MEASURED_HEADING = (
    "guard checks: each call of a compiled function checks the guards of its cache entries, the entry it hit last first, "
    "until one holds; torch timed each entry's check when it compiled it (on 2.13 once, cold), and the range per call is derived from "
    "that; what the calls paid is measured at run time (--measure-guards)"
)


def heading(run: Run) -> str:
    return MEASURED_HEADING if run.guards_measured else HEADING


def cost_order(item: tuple[FunctionSummary, GuardCost]) -> tuple[float, int]:
    """Costliest first: by the most a call can pay, then by guards."""
    cost = item[1]
    high = cost.per_call.high_us if cost.per_call is not None else -1.0
    last = cost.last
    return (-high, -((last.leaves or last.torch_guards or 0) if last is not None else 0))


def guard_cost_lines(run: Run, costs: tuple[tuple[FunctionSummary, GuardCost], ...]) -> list[tuple[str, list[str]]]:
    """Per function with :data:`MANY` guards or more, or every function when the run measured its lookups
    (costliest first, :data:`SHOWN` of them): its cost sentence, where its guards come from and what its calls
    paid; a last line counting the other functions. Nothing when none is shown: a function of a few dozen
    guards costs its calls little, and every function's figures are in ``--format json``."""
    measured = bool(run.guards_measured)
    heavy = sorted((c for c in costs if measured or guards_of(c[1]) >= MANY), key=cost_order)
    if not heavy:
        return []
    out = []
    for f, cost in heavy[:SHOWN]:
        under = [line for line in (origins_sentence(f, cost), measured_guards_sentence(run, f), remover_sentence(run, cost)) if line]
        out.append((cost_sentence(f, cost), under))
    more = len(heavy) - SHOWN
    if more > 0:
        which = "" if measured else f" with {MANY} guards or more"
        out.append((f"and {more} more compiled function{'s' if more > 1 else ''}{which} (every one in --format json)", []))
    light = len(costs) - len(heavy)
    if light:
        out.append((f"{light} other compiled function{'s' if light > 1 else ''} with fewer than {MANY} guards each", []))
    return out


def guards_of(cost: GuardCost) -> int:
    """The most guards of any of its entries, by the listing's count or torch's."""
    return max((max(e.leaves or 0, e.torch_guards or 0) for e in cost.entries), default=0)


def cost_sentence(f: FunctionSummary, cost: GuardCost) -> str:
    """``forward (model.py:12): 3 cache entries of 1,454 guards (torch built them from 1,581); one check 158-371 us;
    a call pays 158 us when it hits the entry it hit last, up to 1.48 ms when it checks all 3``."""
    entries = cost.entries
    live = cost.per_call.entries if cost.per_call is not None else len(entries)
    leaves = sorted({e.leaves for e in entries if e.leaves is not None})
    torch_counts = sorted({e.torch_guards for e in entries if e.torch_guards is not None})
    if leaves:
        guards = f"{_span(leaves, _count)} guards"
        if torch_counts:
            guards += f" (torch built {'it' if live == 1 else 'them'} from {_span(torch_counts, _count)})"
    elif torch_counts:
        guards = f"{_span(torch_counts, _count)} guards as torch counts them"
    else:
        guards = "guards"
    shape = f"1 cache entry of {guards}" if live == 1 else f"{live} cache entries of {guards}"
    if len(entries) > live:
        shape += f" ({len(entries) - live} more dropped by torch._dynamo.reset() or in another code object)"
    call = cost.per_call
    if call is None:
        return f"{function_label(f)}: {shape}; torch logged no time for a check (torch >= 2.6 logs it under TORCH_LOGS=guards)"
    latencies = sorted(e.latency_us for e in entries if e.latency_us is not None)
    one = _micros_span(latencies)
    if call.entries == 1:
        return f"{function_label(f)}: {shape}; one check {one}, which each call pays"
    unmeasured = f" ({call.entries - call.measured} not timed)" if call.measured < call.entries else ""
    return (
        f"{function_label(f)}: {shape}; one check {one}{unmeasured}; a call pays {micros(call.low_us)} when it hits the entry "
        f"it hit last, up to {micros(call.high_us)} when it checks all {call.entries}"
    )


def remover_sentence(run: Run, cost: GuardCost) -> str | None:
    """For a function of :data:`GUARD_HEAVY` guards or more on a torch with the helper (or of unknown version): the
    guard filter that gives up least, what it drops and gives up, and the compare that measures it (never run by
    ``run``: not verified). None otherwise."""
    row = guard_filter(SUGGESTED_FILTER)
    version = torch_version_tuple(run.torch_version)
    if guards_of(cost) < GUARD_HEAVY or (version is not None and version < row.since):
        return None
    command = compare_command(run, filter_config(SUGGESTED_FILTER))
    return (
        f"fewer guards: compile it with options={{\"guard_filter_fn\": torch.compiler.{row.name}}} (torch {version_text(row.since)}+), "
        f"which drops {DROPS[row.drops]}; it gives up: {GIVES_UP[row.gives_up]}; not verified: {command} measures it "
        "(every way to fewer guards: guarddiag flags --guard-removers)"
    )


def origins_sentence(f: FunctionSummary, cost: GuardCost) -> str | None:
    """``most are on `self.blocks` (24 items, about 58 guards each): 1,397 of 1,455 (96%); then ...``: where the last
    entry's guards come from."""
    last = next((e.listed for e in reversed(cost.entries) if e.listed is not None and e.listed.origins), None)
    if last is None or not last.leaves:
        return None
    rows = [_origin_words(o, last.leaves) for o in last.origins]
    return f"where the guards of its last entry are: {'; '.join(rows)}"


def _origin_words(o: GuardOrigin, total: int) -> str:
    share = f" ({o.guards * 100 // total}%)" if o.guards * 100 // total >= 10 else ""
    items = f" ({_count(o.members)} items, about {_count(round(o.guards / o.members))} guards each)" if o.members else ""
    return f"{origin_name(o)}{items}: {_count(o.guards)}{share}"


def origin_name(o: GuardOrigin) -> str:
    """An origin in the user's words: `` `self.blocks` ``, ``the frame as a whole (grad mode, ...)``, Python's builtins,
    a module torch imported for the frame."""
    if not o.source:
        return "the frame as a whole (grad mode, global state, default device, dispatch keys)"
    name = readable_source(o.source)
    if name.startswith("__builtins_dict___"):
        return "Python's builtins"
    if name.startswith("__import_"):
        module, _, rest = name.removeprefix("__import_").partition(".")
        module = module.replace("_dot_", ".")
        return f"module `{module}`" + (f" (`{rest}`)" if rest else "")
    return f"`{name}`, apart from the above" if o.rest else f"`{name}`"


def _micros_span(values: list[float]) -> str:
    """``158-371 us``, ``0.90-1.20 ms``, ``371 us-1.20 ms``: one unit written once where both share it."""
    low, high = micros(values[0]), micros(values[-1])
    if low == high:
        return low
    low_figure, _, low_unit = low.partition(" ")
    return f"{low_figure}-{high}" if high.endswith(" " + low_unit) else f"{low}-{high}"


def _count(n: int) -> str:
    return f"{n:,}"


def _span(values: Sequence[T], shown: Callable[[T], str]) -> str:
    """``158-371 us``: the least and most of sorted ``values``, one figure when they are the same."""
    return shown(values[0]) if values[0] == values[-1] else f"{shown(values[0])}-{shown(values[-1])}"
