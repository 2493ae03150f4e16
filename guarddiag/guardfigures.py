"""Guard count and guard latency of each function of a run, for ``compare``'s before -> after rows.

Two counts, because they differ where it matters: torch's ``guard_count`` (CompilationMetrics) is
``len(output.guards)``, the guards Dynamo collected *before* a ``guard_filter_fn`` dropped any (torch
2.13.0 ``_dynamo/convert_frame.py`` 2197); the guard listing (``TORCH_LOGS=guards``) shows the tree that
was installed, after the filter. torch's ``guard_latency_us`` is measured on the installed tree, once per
compile, so it follows the filter but is one noisy sample. Kept in one small function per figure so the
lead's per-entry view (``guarddiag.guardcost``) can replace it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from guarddiag.ids import FrameId, FunctionKey
from guarddiag.model import FunctionSummary, Guard, Run


@dataclass(frozen=True)
class GuardFigures:
    """One function's guards in one run: ``entries``, the cache entries torch measured; of the newest one
    and summed over all: torch's count (before any filter), the listing's count (the installed tree, None
    without a listing) and torch's latency in microseconds (None where torch kept none)."""

    key: FunctionKey
    entries: int
    torch_count_last: int | None
    torch_count_sum: int | None
    listed_last: int | None
    listed_sum: int | None
    latency_last_us: float | None
    latency_sum_us: float | None


Listings = Mapping[FrameId, Mapping[int, tuple[Guard, ...]]]


def function_figures(f: FunctionSummary, listings: Listings | None) -> GuardFigures:
    """The function's figures from torch's per-compile metrics and the run's guard listings."""
    measured = [m for m in f.torch_metrics if m.guard_count is not None or m.guard_latency_us is not None]
    counts = [m.guard_count for m in measured if m.guard_count is not None]
    latencies = [m.guard_latency_us for m in measured if m.guard_latency_us is not None]
    listed = [
        (frame.frame, number, len(guards))
        for frame in f.frame_ids
        for number, guards in sorted((listings or {}).get(frame, {}).items())
    ]
    return GuardFigures(
        f.key,
        len(measured),
        counts[-1] if counts else None,
        sum(counts) if counts else None,
        listed[-1][2] if listed else None,
        sum(n for *_, n in listed) if listed else None,
        latencies[-1] if latencies else None,
        sum(latencies) if latencies else None,
    )


def run_figures(run: Run) -> tuple[GuardFigures, ...]:
    """Every function's figures; the listings are read from the run's own log (none when it is gone)."""
    listings = _listings(run)
    return tuple(function_figures(f, listings) for f in run.functions)


def _listings(run: Run) -> Listings | None:
    from guarddiag.explain import listings_of
    from guarddiag.logparse.encoding import open_log

    if not run.log_path:
        return None
    try:
        with open_log(Path(run.log_path)) as fh:
            return listings_of(fh).by_frame
    except OSError:
        return None


# torch measures a tree's latency once per compile: the same run gives other figures each time. A change of
# latency is a change only past both margins: one side at least LATENCY_FACTOR times the other, and more than
# LATENCY_MARGIN_US apart. Measured (docs/guard-cost.md#what-removes-guards): five runs of the same
# configuration of bench/guard_heavy_model.py --blocks 48 gave the newest entry of forward 153-252 us (1.65x)
# and of its resume function 130-192 us (1.48x), and one compile in 60 measured 12,753 us on a busy machine.
# A count is exact.
LATENCY_FACTOR = 2.0
LATENCY_MARGIN_US = 10.0

# How a figure moved against the baseline (:func:`latency_change`).
FEWER, MORE, SAME, NOISE, UNKNOWN = "fewer", "more", "same", "within_noise", "unknown"


def latency_change(before: float | None, after: float | None) -> str:
    """Whether a latency fell or rose past torch's noise (:data:`NOISE` when within it)."""
    if before is None or after is None:
        return UNKNOWN
    low, high = sorted((before, after))
    if high - low <= LATENCY_MARGIN_US or high < LATENCY_FACTOR * low:
        return NOISE
    return FEWER if after < before else MORE


def count_change(before: int | None, after: int | None) -> str:
    """Whether a guard count fell or rose (counts are exact: any difference is one)."""
    if before is None or after is None:
        return UNKNOWN
    return SAME if after == before else FEWER if after < before else MORE
