"""Words for the ranks of a distributed job: the rank-divergence section (guarddiag.divergence) every
run report has when the run had two ranks or more, the gate's finding, and the rows and sections of
ranks that compiled a function alike, shown once for all of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from guarddiag.divergence import Divergence, RankBehaviour
from guarddiag.model import FunctionSummary, Run, report_order
from guarddiag.render.summary import function_detail_lines
from guarddiag.render.words import function_label, rank_cause_words

if TYPE_CHECKING:
    from guarddiag.report import RunReport

UNNAMED = "the log does not name every frame compiled there; capture it with TORCH_LOGS=dynamo,guards,recompiles or use `guarddiag run`"
UNCOUNTED = (
    "the log shows no compile there and torch's own count is not known: a rank that compiled nothing and a log that "
    "lost its lines read the same; `guarddiag run` counts each rank"
)
LOST = "its log shows fewer compiles than torch counted there: it lost lines, and what it compiled is not known"
_LIMIT = ", hit the recompile limit"
WHY = "ranks that compile different graphs can stall or mismatch in their collectives"


def rank_list(ranks: tuple[int, ...]) -> str:
    """``rank 1``, ``ranks 0, 2, 3``."""
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def rank_ranges(spans: tuple[tuple[int, int], ...]) -> str:
    """``rank 3``, ``ranks 2, 3``, ``ranks 2-999999999``: ranks given as ranges ``(first, last)``."""
    count = sum(last - first + 1 for first, last in spans)
    parts = [str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in spans]
    return f"{'rank' if count == 1 else 'ranks'} {', '.join(parts)}"


def _times(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def behaviour_phrase(b: RankBehaviour) -> str:
    """``2 compiles, 1 recompile (size of tensor argument `x` at dim 0)``; ``never compiled it``."""
    if not b.compiles:
        return "never compiled it"
    causes = _causes(b) or "causes not in the log"
    recompiles = f"{_times(b.recompiles, 'recompile')} ({causes})" if b.recompiles else "no recompiles"
    return f"{_times(b.compiles, 'compile')}, {recompiles}" + (_LIMIT if b.limit_hit else "")


def divergence_sentence(d: Divergence) -> str:
    """``rank 1 recompiled it 1 time (size of tensor argument `x` at dim 0); rank 0 did not``, or each
    group's counts when the usual behaviour recompiles too."""
    usual = d.usual
    plain = usual.compiles and not usual.recompiles and not usual.limit_hit
    parts = []
    for g in d.unusual:
        if plain and g.recompiles and g.compiles == usual.compiles + g.recompiles:
            limit = _LIMIT if g.limit_hit else ""
            parts.append(f"{rank_list(g.ranks)} recompiled it {_times(g.recompiles, 'time')} ({_causes(g)}){limit}")
        elif not g.compiles:
            parts.append(f"{rank_list(g.ranks)} never compiled it")
        else:
            parts.append(f"{rank_list(g.ranks)}: {behaviour_phrase(g)}")
    if d.unusual and plain and all(g.recompiles for g in d.unusual):
        parts.append(f"{rank_list(usual.ranks)} did not")
    else:
        parts.append(f"{rank_list(usual.ranks)}: {behaviour_phrase(usual)}")
    if d.unknown:
        parts.append(f"{rank_list(d.unknown)}: not known ({UNNAMED})")
    uncounted = tuple(r for r in d.uncounted if r not in d.lost)
    if uncounted:
        parts.append(f"{rank_list(uncounted)}: not known ({UNCOUNTED})")
    if d.lost:
        parts.append(f"{rank_list(d.lost)}: not known ({LOST})")
    if d.unclear:
        parts.append(f"{rank_list(d.unclear)}: the same counts, causes not known (the log shows a recompile there without its reasons)")
    return "; ".join(parts)


def _job(job: str) -> str:
    return f" of {job}" if job else ""


def divergence_label(d: Divergence) -> str:
    """The function without its process (the sentence names the ranks), with the job when records of several were read."""
    return (f"[{d.job}] " if d.job else "") + function_label(d.function, process=False)


def headline_lines(report: RunReport) -> list[str]:
    """The section's lines for the terminal and markdown reports (no indent, no bullets): a headline,
    then one line per diverging function, then the ranks no comparison took in; nothing for a run
    with fewer than two ranks. All from the report's comparison (report.RunReport)."""
    run = report.run
    jobs = {job: ranks for job, ranks in report.jobs.items() if ranks.size > 1}
    if not jobs:
        return []
    # With fewer than two ranks compared in every job, no function is compared: none is listed.
    comparable = any(len(r.compared) > 1 for r in jobs.values())
    found = report.divergence if comparable else ()
    seen = "; ".join(f"{rank_list(r.compared)}{_job(job)}" for job, r in jobs.items() if r.compared)
    unnamed = "; ".join(f"{rank_list(ranks)}{_job(job)}" for job, ranks in report.unnamed.items() if job in jobs)
    # Frames the log never named are compared nowhere: a "none" would say more than is known.
    advice = "" if any(d.unknown for d in found) else f" ({UNNAMED})"
    gap = [f"not compared: frames the log does not name on {unnamed}{advice}"] if unnamed else []
    others = []
    for job, r in jobs.items():
        said = [d for d in found if d.job == job]
        uncounted = tuple(x for x in r.uncounted if x not in r.lost)
        if uncounted:
            said_why = any(set(d.uncounted) - set(d.lost) for d in said)
            others.append(f"not compared: {rank_list(uncounted)}{_job(job)}" + ("" if said_why else f" ({UNCOUNTED})"))
        if r.lost:
            others.append(f"not compared: {rank_list(r.lost)}{_job(job)}" + ("" if any(d.lost for d in said) else f" ({LOST})"))
    others += [
        f"not in this run: {rank_ranges(r.missing)}{_job(job)} of the job's {r.world_size} (WORLD_SIZE): another node's part of "
        "the job; run each node under guarddiag and join their records with `guarddiag merge`"
        for job, r in jobs.items()
        if r.missing
    ]
    if not comparable:
        alone = f"{seen} in this run" if seen else "no rank in this run is known to have compiled"
        return [f"rank divergence: not compared ({alone})", *gap, *others]
    if not found and not any(f.name for f in run.functions if f.process.job_rank is not None):
        return [f"rank divergence: not known ({seen}: {UNNAMED})", *others]
    gap += others
    if not found:
        alike = "compiled every function the log names alike" if unnamed else "compiled every function alike"
        return [f"rank divergence: none ({seen} {alike})", *gap]
    lines = [f"{divergence_label(d)}: {divergence_sentence(d)}" for d in found]
    known = [d for d in found if d.known]
    if not known:
        maybe = _times(len(found), "function")
        return [f"rank divergence: not known ({seen}: the logs cannot tell whether {maybe} compiled the same on each)"] + lines + gap
    return [f"rank divergence: {_times(len(known), 'function')} compiled differently across {seen} ({WHY})"] + lines + gap


@dataclass(frozen=True)
class Shown:
    """A function as the terminal and markdown reports show it: one process's, or the same function of
    several ranks of one job that compiled it alike (``functions``: each rank's summary, ``ranks``)."""

    functions: tuple[FunctionSummary, ...]
    label: str

    @property
    def function(self) -> FunctionSummary:
        return self.functions[0]

    @property
    def folded(self) -> bool:
        return len(self.functions) > 1


def shown_functions(run: Run) -> list[Shown]:
    """The run's functions in report order; the ranks of one job that compiled a function alike (the
    same counts, causes, limit hits and graph breaks) as one entry labelled with their ranks: a job of 64
    ranks reads as its few behaviours, not 64 copies. The record keeps every rank."""
    groups: dict[object, list[FunctionSummary]] = {}
    for f in sorted(run.functions, key=report_order):
        where = f.process.job_rank
        key: object = (
            (where[0], f.name, f.file, f.line, f.compiles, f.recompiles, f.limit_hit, len(f.graph_breaks), tuple(function_detail_lines(f)))
            if where is not None and f.name
            else id(f)
        )
        groups.setdefault(key, []).append(f)
    return [Shown(tuple(fs), _label(fs)) for fs in groups.values()]


def _label(functions: list[FunctionSummary]) -> str:
    if len(functions) == 1:
        return function_label(functions[0])
    job = functions[0].process.job_rank
    assert job is not None, "only ranks are folded"
    ranks = sorted(r for f in functions if (r := f.process.job_rank) is not None)
    label = rank_list(tuple(rank for _, rank in ranks))
    return f"{function_label(functions[0], process=False)} [{job[0] + '/' if job[0] else ''}{label}]"


def _causes(b: RankBehaviour) -> str:
    """The causes some ranks recompiled on, in words, ``; ``-joined."""
    return "; ".join(rank_cause_words(c.cause, c.also) for c in b.causes)
