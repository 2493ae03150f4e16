"""Guard count and guard latency of each function of a run, for ``compare``'s before -> after rows: the
newest cache entry's and the sum over entries, from :func:`guarddiag.guardcost.guard_cost`.

Two counts, because they differ where it matters: torch's ``guard_count`` (CompilationMetrics) is
``len(output.guards)``, the guards Dynamo collected *before* a ``guard_filter_fn`` dropped any (torch
2.13.0 ``_dynamo/convert_frame.py`` 2197); the listing's leaves are the tree that was installed, after
the filter. torch's latency is measured on the installed tree, once per compile, so it follows the filter
but is one noisy sample.
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.guardbudget import LatencyMargin
from guarddiag.guardcost import guard_cost
from guarddiag.ids import FunctionKey
from guarddiag.model import FunctionSummary, Run


@dataclass(frozen=True)
class GuardFigures:
    """One function's guards in one run: ``entries``, its cache entries; of the newest one and summed over
    all: the listing's leaves (the installed tree, None without a listing), torch's count (before any
    filter) and torch's latency in microseconds (None where neither the log nor torch's record had it)."""

    key: FunctionKey
    entries: int
    listed_last: int | None
    listed_sum: int | None
    torch_count_last: int | None
    torch_count_sum: int | None
    latency_last_us: float | None
    latency_sum_us: float | None
    # What its calls paid, measured at run time (compare --measure-guards): the median lookup of its frame
    # with the most timed calls, and how many; None where not measured.
    measured_median_us: float | None = None
    measured_calls: int | None = None


def function_figures(f: FunctionSummary) -> GuardFigures:
    """The function's figures, from its cache entries as :mod:`guarddiag.guardcost` reads them."""
    cost = guard_cost(f)
    entries = cost.entries if cost is not None else ()
    leaves = [e.leaves for e in entries]
    counts = [e.torch_guards for e in entries]
    latencies = [e.latency_us for e in entries]
    timed = max((t for t in f.guard_times if t.median_us is not None), key=lambda t: t.timed, default=None)
    return GuardFigures(
        f.key, len(entries), *_last_and_sum(leaves), *_last_and_sum(counts), *_last_and_sum(latencies),
        timed.median_us if timed is not None else None, timed.timed if timed is not None else None,
    )


def _last_and_sum(values: list) -> tuple:
    """The newest entry's figure and the sum over entries; None for a sum when some entry's is not known."""
    if not values or values[-1] is None:
        return None, None
    # Latencies carry two decimals (the log's): a sum of floats keeps them, not 1479.5600000000002.
    return values[-1], (round(sum(values), 2) if None not in values else None)


def run_figures(run: Run) -> tuple[GuardFigures, ...]:
    """Every function's figures."""
    return tuple(function_figures(f) for f in run.functions)


# torch measures a tree's latency once per compile: the same run gives other figures each time, and a loaded
# machine 2-4x more. A change of latency is one only past the margin ``check`` gates it with (guardbudget: x4,
# or +150 us for small trees), measured there on a quiet and a loaded machine; a tighter rule (x2 or 10 us)
# called an unchanged configuration "slower" on a loaded CI machine. compare --measure-guards gives what calls
# paid, which is the figure to read for a smaller change. A count is exact.
MARGIN = LatencyMargin()

# How a figure moved against the baseline (:func:`latency_change`).
FEWER, MORE, SAME, NOISE, UNKNOWN = "fewer", "more", "same", "within_noise", "unknown"
# Two torch versions time a tree differently: 2.7.1 averages 50 warm checks (guards.py, profile_guard_manager(...,
# 50)), 2.13.0 times one check after flushing the CPU cache (profile_guard_manager(..., 1)): their figures are not
# one measurement, and only a run-time measurement (--measure-guards) compares them.
INCOMPARABLE = "other_torch"


def latency_change(before: float | None, after: float | None, same_torch: bool = True) -> str:
    """Whether a latency fell or rose past torch's noise (:data:`NOISE` when within it); :data:`INCOMPARABLE`
    between runs of two torch versions, which time a check differently."""
    if before is None or after is None:
        return UNKNOWN
    if not same_torch:
        return INCOMPARABLE
    if after > MARGIN.allowed(before):
        return MORE
    if before > MARGIN.allowed(after):
        return FEWER
    return NOISE


def count_change(before: int | None, after: int | None) -> str:
    """Whether a guard count fell or rose (counts are exact: any difference is one)."""
    if before is None or after is None:
        return UNKNOWN
    return SAME if after == before else FEWER if after < before else MORE
