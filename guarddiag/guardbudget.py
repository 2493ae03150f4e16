"""The two guard figures ``check`` gates per function, and the margin on latency (pure; issue 28).

``guards``: the most guards of any cache entry a call walks (the tree's leaves as listed, else torch's
``guard_count``). For the same code and the same torch it is the same every run, so the gate holds it
exactly: one guard more fails.

``latency_us``: the cheapest such entry's check, as torch measured it at compile time (what every call
pays at least: ``CallCost.low_us``). torch times each tree once, right after flushing the CPU cache
(``torch/_dynamo/guards.py``: ``profile_guard_manager(..., 1)``), so one entry now and then reads tens of
times its usual figure (a preempted check on a shared machine: 8,172 us for a tree that reads about 80).
Such a spike is always upward, so the least of the entries is the figure least moved by it; still it
moves by up to 1.75x between runs on a quiet machine, and a loaded one (other jobs on its cores, as on a
shared CI runner) makes it 2-4x slower throughout (bench/results.md, "spread of torch's guard latency"),
so it is gated with a margin: it may grow to ``max(baseline x factor, baseline + floor)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.guardcost import GuardCost, guard_cost
from guarddiag.model import FunctionSummary

# Defaults of the latency margin, from the spread measured in bench/results.md: the cheapest entry moved by up
# to 1.75x between runs on 2 cores at load 3-5, and by up to 4.0x between such a run and one with three more
# busy processes (48 -> 193 us for 279 guards; 92 -> 317 us for 759): a baseline recorded on a quiet runner,
# checked on a loaded one. x4 covers the multiplicative part, the floor the small functions (tens of
# microseconds) whose loaded figure is more an added delay (up to +145 us) than a multiple.
LATENCY_FACTOR = 4.0
LATENCY_FLOOR_US = 150.0


@dataclass(frozen=True)
class GatedFigures:
    """A function's gated guard figures, each None where the run does not tell it (a torch before 2.6, a log
    without the ``guards`` channel, a record without torch's figures)."""

    guards: int | None
    latency_us: float | None

    @property
    def known(self) -> bool:
        return self.guards is not None or self.latency_us is not None


NOT_KNOWN = GatedFigures(None, None)


@dataclass(frozen=True)
class LatencyMargin:
    """How far the latency may grow past the baseline's figure: ``factor`` times it, or ``floor_us`` more, whichever is more."""

    factor: float = LATENCY_FACTOR
    floor_us: float = LATENCY_FLOOR_US

    def allowed(self, baseline_us: float) -> float:
        return max(baseline_us * self.factor, baseline_us + self.floor_us)


def gated_figures_of(cost: GuardCost | None) -> GatedFigures:
    """The gated figures of a function's guard cost (guardcost.py), over the entries a call walks."""
    if cost is None:
        return NOT_KNOWN
    counts = [c for e in cost.live for c in (e.leaves if e.leaves is not None else e.torch_guards,) if c is not None]
    return GatedFigures(max(counts) if counts else None, cost.per_call.low_us if cost.per_call is not None else None)


def gated_figures(f: FunctionSummary) -> GatedFigures:
    """The gated figures of one function of a run."""
    return gated_figures_of(guard_cost(f))
