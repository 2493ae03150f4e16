"""Report values of runs built in a unit test, as ``compare`` holds its repeats (``VariantResult.reports``)."""

from __future__ import annotations

from guarddiag.model import Run
from guarddiag.report import RunReport, run_report


def reports(*runs: Run) -> tuple[RunReport, ...]:
    """Each run's report value, in order."""
    return tuple(run_report(run) for run in runs)
