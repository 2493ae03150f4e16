"""The report value of one run (``run``, ``parse``, ``merge``; each run ``check`` gates): everything its
reports show that is derived from the run, computed once and frozen. Every renderer (``render/``), the
gate (``gate.py``), the record (``--out``, the run folder's ``run.json``) and the JSON report take this
value and compute none of it again, as coverage's reporters take one analysis and pyinstrument's
renderers one session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from guarddiag.divergence import Divergence, JobRanks, divergence_dict, job_ranks, rank_divergence, unnamed_ranks
from guarddiag.guardcost import GuardCost, cost_dicts, guard_cost
from guarddiag.ids import Process
from guarddiag.model import FunctionSummary, Run, StanceUse, Unobserved, compile_gaps, uncounted, uncounted_stances
from guarddiag.store import run_to_dict, save_record
from guarddiag.torchcheck import ReasonDisagreement, reason_disagreements

if TYPE_CHECKING:
    from guarddiag.verdicts import RunAdvice


@dataclass(frozen=True)
class RunReport:
    """One run and what its reports say of it: ``advice`` (``guarddiag run``: each cause group's fix hint
    and where it stands), ``gaps`` (each process whose log lost lines: ``(process, counted, seen)``),
    ``uncounted`` (processes whose compiles are not counted) and ``uncounted_stances`` (stances whose
    refused calls are not), ``jobs`` (each job's ranks: :class:`JobRanks`), ``unnamed`` (per job, ranks
    with frames the log never named), ``divergence`` (the functions the ranks of a job compiled
    differently) and ``disagreements`` (recompiles whose cause torch's own record gives otherwise than
    guarddiag read it: :mod:`guarddiag.torchcheck`)."""

    run: Run
    advice: RunAdvice | None
    gaps: tuple[tuple[Process, int, int], ...]
    uncounted: tuple[Unobserved, ...]
    uncounted_stances: tuple[StanceUse, ...]
    jobs: Mapping[str, JobRanks]
    unnamed: Mapping[str, tuple[int, ...]]
    divergence: tuple[Divergence, ...]
    disagreements: tuple[ReasonDisagreement, ...] = ()
    # Each function whose guards the log or torch's record tell of, with what they cost (guardcost.py).
    guard_costs: tuple[tuple[FunctionSummary, GuardCost], ...] = ()

    @property
    def counted(self) -> bool:
        """Whether the run's counts are whole: no log lost lines, every process and stance counted."""
        return not (self.gaps or self.uncounted or self.uncounted_stances)


def run_report(run: Run, advice: RunAdvice | None = None) -> RunReport:
    """The report value of ``run`` (with ``advice`` where ``guarddiag run`` decided it): each derived
    fact computed once, the rank comparison from the job's ranks and gaps found here."""
    gaps = compile_gaps(run)
    jobs = job_ranks(run, gaps)
    unnamed = unnamed_ranks(run)
    return RunReport(
        run, advice, gaps, uncounted(run), uncounted_stances(run), jobs, unnamed, rank_divergence(run, jobs, unnamed),
        reason_disagreements(run), guard_costs(run),
    )


def guard_costs(run: Run) -> tuple[tuple[FunctionSummary, GuardCost], ...]:
    """Each function of ``run`` whose guards are known, with their cost."""
    return tuple((f, cost) for f in run.functions if (cost := guard_cost(f)) is not None)


def run_reports(runs: Mapping[str, Run]) -> dict[str, RunReport]:
    """The report value of each run, by the same key (``check``'s scripts)."""
    return {key: run_report(run) for key, run in runs.items()}


def record_dict(report: RunReport) -> dict[str, object]:
    """The run record (the documented contract), its ``rank_divergence`` from the report's comparison."""
    return run_to_dict(report.run, divergence_dict(report.jobs, report.divergence, report.unnamed), cost_dicts(report.guard_costs))


def save_report(report: RunReport, path: Path) -> None:
    """Write the run record of ``report`` to ``path`` (atomically, through the store)."""
    save_record(record_dict(report), path)
