"""Rank divergence: the functions that the ranks of one distributed job compiled differently.

Ranks of a data-parallel job run the same code on the same kind of input; when one rank recompiles
and the others do not (a different batch shape, branch or config), the ranks then run different
graphs, and their collectives may stall or mismatch. Pure: facts only (render.divergence words them).

A rank is a process named ``rankN`` (``ids.py``), or ``LABEL/rankN`` when ``merge --jobs`` read the
records of several jobs together: ranks are compared only within their job. A function a rank never
compiled counts as 0 compiles there, among the ranks that compiled anything and those known to have
compiled nothing (torch counted no compile in them: a job guarddiag ran, or the merged records of
its nodes). A rank whose log shows no compile while torch's own count is not known (a parsed log
dir) is not compared, nor a rank whose log shows fewer compiles than torch counted in it (it lost lines:
what it compiled is not known), nor a rank below the job's WORLD_SIZE that no process of the run is
(another node's part of the job): :class:`JobRanks` says which.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from guarddiag.ids import Process
from guarddiag.model import Cause, CauseIdentity, FunctionSummary, Run, compile_gaps
from guarddiag.render.words import rank_cause_words


@dataclass(frozen=True)
class JobRanks:
    """The ranks of one job as a run knows them: ``compiled`` (compiled anything), ``silent``
    (compiled nothing, as torch itself counted in them), ``uncounted`` (their log shows no compile and
    torch's own count is not known, or ``lost``: their log shows fewer compiles than torch counted in
    them, it lost lines; not compared either way), ``missing`` (below ``world_size`` but no process of
    the run: another node's part of the job), as ranges ``(first, last)``: a record's WORLD_SIZE may say
    a billion, and the ranks present bound the work."""

    compiled: tuple[int, ...] = ()
    silent: tuple[int, ...] = ()
    uncounted: tuple[int, ...] = ()
    missing: tuple[tuple[int, int], ...] = ()
    world_size: int | None = None
    # Of ``uncounted``, the ranks whose log lost lines (torch counted more compiles than it shows).
    lost: tuple[int, ...] = ()

    @property
    def compared(self) -> tuple[int, ...]:
        return tuple(sorted((*self.compiled, *self.silent)))

    @property
    def size(self) -> int:
        """Ranks of the job the run knows of: compared, uncounted or missing."""
        return len(self.compared) + len(self.uncounted) + sum(last - first + 1 for first, last in self.missing)


def job_ranks(run: Run, gaps: tuple[tuple[Process, int, int], ...] | None = None) -> dict[str, JobRanks]:
    """Per job label, its ranks: from the functions each rank compiled and from the job's processes
    (a rank that compiled nothing is listed there, with torch's own count of its compiles). ``gaps``:
    the run's :func:`~guarddiag.model.compile_gaps` where the caller has them (report.run_report)."""
    compiled: dict[str, set[int]] = {}
    for f in run.functions:
        where = f.process.job_rank
        if where is not None:
            compiled.setdefault(where[0], set()).add(where[1])
    quiet: dict[str, dict[int, bool]] = {}
    lost: dict[str, set[int]] = {}
    lossy = {process for process, _, _ in (compile_gaps(run) if gaps is None else gaps)}
    sizes: dict[str, set[int]] = {}
    for p in run.job.processes if run.job is not None else ():
        where = p.process.job_rank
        if where is None:
            continue
        job, rank = where
        if p.world_size:
            sizes.setdefault(job, set()).add(p.world_size)
        if p.process in lossy:
            # Its log lost lines: a function it shows no frame of may still have compiled there.
            lost.setdefault(job, set()).add(rank)
        elif rank not in compiled.get(job, set()):
            quiet.setdefault(job, {})[rank] = p.torch_compiles == 0
    found = {}
    for job in sorted({*compiled, *quiet, *lost}):
        gone = lost.get(job, set())
        mine, still = compiled.get(job, set()) - gone, quiet.get(job, {})
        size = sizes[job].pop() if len(sizes.get(job, ())) == 1 else None
        known = mine | set(still) | gone
        found[job] = JobRanks(
            tuple(sorted(mine)),
            tuple(sorted(r for r, silent in still.items() if silent)),
            tuple(sorted({*(r for r, silent in still.items() if not silent), *gone})),
            _gaps(known, size or 0),
            size,
            tuple(sorted(gone)),
        )
    return found


def _gaps(known: set[int], size: int) -> tuple[tuple[int, int], ...]:
    """The ranks below ``size`` not in ``known``, as ranges ``(first, last)``: work bounded by the ranks known."""
    gaps, start = [], 0
    for rank in sorted(r for r in known if 0 <= r < size):
        if rank > start:
            gaps.append((start, rank - 1))
        start = rank + 1
    return (*gaps, (start, size - 1)) if start < size else tuple(gaps)


@dataclass(frozen=True)
class RankCause:
    """A cause some ranks recompiled on: the decisive cause of a recompile, or (``also``) what else changed
    against the entry it missed."""

    cause: Cause
    also: bool = False


# A rank's causes as compared: each by its identity (Cause.key), ``also`` apart, each once, first seen first.
_Seen = tuple[tuple[bool, CauseIdentity], ...]


@dataclass(frozen=True)
class RankBehaviour:
    """What some ranks did with one function: the same compiles, recompiles, causes and limit hit."""

    ranks: tuple[int, ...]
    compiles: int
    recompiles: int
    # The decisive cause of each recompile and what else changed against the entry it missed, each once
    # (by its identity), first seen first, as the group's lowest rank recompiled on it.
    causes: tuple[RankCause, ...]
    limit_hit: bool


@dataclass(frozen=True)
class Divergence:
    """One function the ranks of ``job`` did not compile alike; ``groups``: the most ranks first
    (the usual behaviour), then the others, each group's ranks ascending. ``function`` is one
    rank's summary of it (for its name and label), ``per_rank`` each rank's that compiled it. ``unknown``: ranks whose log does not name
    some of their compiled frames and that show no frame of this name: whether they compiled it
    cannot be known (a log without ``TORCH_LOGS=dynamo`` names a frame only when it recompiles).
    ``uncounted``: ranks whose log shows no compile at all, with torch's own count not known
    (:class:`JobRanks`), or whose log lost lines (``lost``, of those): whether they compiled it cannot
    be known either. ``unclear``: ranks that counted what others did, with a recompile whose cause
    their log does not show: whether their causes differ is not known."""

    job: str
    function: FunctionSummary
    groups: tuple[RankBehaviour, ...]
    unknown: tuple[int, ...] = ()
    per_rank: tuple[tuple[int, FunctionSummary], ...] = ()
    uncounted: tuple[int, ...] = ()
    lost: tuple[int, ...] = ()
    unclear: tuple[int, ...] = ()

    @property
    def known(self) -> bool:
        """Whether the ranks are known to differ (two behaviours), not only possibly (one behaviour,
        and ranks whose logs cannot show whether they did the same)."""
        return len(self.groups) > 1

    @property
    def usual(self) -> RankBehaviour:
        return self.groups[0]

    @property
    def unusual(self) -> tuple[RankBehaviour, ...]:
        return self.groups[1:]


def _unclear(f: FunctionSummary) -> bool:
    """Whether the log shows a recompile of ``f`` without its cause: its causes cannot be compared."""
    return any(e.causes and not e.causes[0].known for e in f.recompile_events)


def _rank_causes(f: FunctionSummary) -> dict[tuple[bool, CauseIdentity], Cause]:
    """A function's causes by identity (``also`` apart), the first of each seen."""
    found: dict[tuple[bool, CauseIdentity], Cause] = {}
    for e in f.recompile_events:
        if e.causes:
            for also, c in ((False, e.causes[0]), *((True, c) for c in e.also)):
                found.setdefault((also, c.key), c)
    return found


def _behaviour(f: FunctionSummary | None) -> tuple[int, int, _Seen, bool]:
    if f is None:
        return (0, 0, (), False)
    # What else changed against the entry a recompile missed counts too: a rank whose recompile also
    # took another branch compiled another graph than ranks that recompiled on the size alone.
    return (f.compiles, f.recompiles, tuple(_rank_causes(f)), f.limit_hit)


def rank_divergence(
    run: Run, jobs: Mapping[str, JobRanks] | None = None, unnamed: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[Divergence, ...]:
    """The functions of ``run`` whose compiles, recompiles, causes or limit hits differ between the
    ranks of a job (empty when the run has fewer than two ranks in any job), in file and line order;
    also a function that recompiled on some ranks while others cannot be known (``unknown``).
    Frames the log never named are not compared (``unknown`` says where they leave a gap). ``jobs`` and
    ``unnamed``: the run's :func:`job_ranks` and :func:`unnamed_ranks` where the caller has them
    (report.run_report)."""
    jobs = job_ranks(run) if jobs is None else jobs
    functions: dict[tuple[str, str, str, int | None], dict[int, FunctionSummary]] = {}
    nameless = {(job, rank) for job, ranks in (unnamed_ranks(run) if unnamed is None else unnamed).items() for rank in ranks}
    for f in run.functions:
        where = f.process.job_rank
        if where is not None and f.name:
            functions.setdefault((where[0], f.name, f.file, f.line), {})[where[1]] = f
    found = []
    for (job, *_), per_rank in functions.items():
        ranks = tuple(sorted((*jobs[job].compared, *jobs[job].uncounted)))
        if len(ranks) < 2:
            continue
        unknown = tuple(r for r in ranks if r not in per_rank and (job, r) in nameless)
        lost = jobs[job].lost
        uncounted = tuple(r for r in jobs[job].uncounted if r not in per_rank or r in lost)
        seen = {rank: _behaviour(per_rank.get(rank)) for rank in ranks if rank not in unknown and rank not in uncounted}
        # A rank whose recompile's cause the log does not show is compared by its counts alone: where
        # another rank counted the same, whether their causes differ is not known.
        clear = {r: b for r, b in seen.items() if r not in per_rank or not _unclear(per_rank[r])}
        unclear = tuple(r for r in seen if r not in clear and any(b[:2] + b[3:] == seen[r][:2] + seen[r][3:] for b in clear.values()))
        groups = _groups({r: b for r, b in seen.items() if r not in unclear}, per_rank)
        suspect = (unknown or uncounted or unclear) and any(g.recompiles or g.limit_hit for g in groups)
        if len(groups) > 1 or suspect:
            lost_here = tuple(r for r in lost if r in uncounted)
            found.append(
                Divergence(job, per_rank[min(per_rank)], groups, unknown, tuple(sorted(per_rank.items())), uncounted, lost_here, unclear)
            )
    return tuple(sorted(found, key=lambda d: (d.job, d.function.file, d.function.line or 0, d.function.name)))


def _groups(seen: dict[int, tuple[int, int, _Seen, bool]], per_rank: dict[int, FunctionSummary]) -> tuple[RankBehaviour, ...]:
    """Ranks grouped by behaviour: the most ranks first; on a tie, a group that compiled it before one
    that never did, then the group without recompiles (the behaviour a job is meant to have), then the
    lowest rank."""
    sizes = Counter(seen.values())
    order = sorted(sizes, key=lambda b: (-sizes[b], b[0] == 0, b[1] > 0, min(r for r, s in seen.items() if s == b)))
    groups = []
    for compiles, recompiles, keys, limit_hit in order:
        ranks = tuple(r for r, s in sorted(seen.items()) if s == (compiles, recompiles, keys, limit_hit))
        first = _rank_causes(per_rank[ranks[0]]) if ranks[0] in per_rank else {}
        causes = tuple(RankCause(first[k], k[0]) for k in keys)
        groups.append(RankBehaviour(ranks, compiles, recompiles, causes, limit_hit))
    return tuple(groups)


def ranks_in(run: Run) -> dict[str, tuple[int, ...]]:
    """The ranks compared, per job label: those that compiled anything or are known to have compiled nothing."""
    return {job: ranks.compared for job, ranks in job_ranks(run).items()}


def unnamed_ranks(run: Run) -> dict[str, tuple[int, ...]]:
    """Per job, the ranks that compiled a frame the log never named (not compared)."""
    jobs: dict[str, set[int]] = {}
    for f in run.functions:
        where = f.process.job_rank
        if where is not None and not f.name:
            jobs.setdefault(where[0], set()).add(where[1])
    return {job: tuple(sorted(ranks)) for job, ranks in sorted(jobs.items())}


@dataclass(frozen=True)
class DivergenceChange:
    """What a configuration did to the rank divergence of the baseline run: the diverging functions
    it removed, added and left (each as one rank's summary)."""

    removed: tuple[FunctionSummary, ...]
    added: tuple[FunctionSummary, ...]
    left: tuple[FunctionSummary, ...]

    def __bool__(self) -> bool:
        return bool(self.removed or self.added or self.left)


def divergence_change(baseline: tuple[Divergence, ...], variant: tuple[Divergence, ...]) -> DivergenceChange:
    """The rank divergence of a variant run against the baseline run's (each its :func:`rank_divergence`),
    function by function (job, name, file, line)."""

    def keyed(found: tuple[Divergence, ...]) -> dict[tuple[str, str, str, int | None], FunctionSummary]:
        return {(d.job, d.function.name, d.function.file, d.function.line): d.function for d in found}

    before, after = keyed(baseline), keyed(variant)
    return DivergenceChange(
        tuple(f for k, f in before.items() if k not in after),
        tuple(f for k, f in after.items() if k not in before),
        tuple(f for k, f in after.items() if k in before),
    )


def divergence_to_dict(d: Divergence) -> dict[str, object]:
    """One diverging function as JSON facts."""
    return {
        "job": d.job,
        "name": d.function.name,
        "file": d.function.file,
        "line": d.function.line,
        "unknown_ranks": list(d.unknown),
        "uncounted_ranks": list(d.uncounted),
        "lost_ranks": list(d.lost),
        "unclear_ranks": list(d.unclear),
        "known": d.known,
        "groups": [
            {
                "ranks": list(g.ranks),
                "compiles": g.compiles,
                "recompiles": g.recompiles,
                "causes": [rank_cause_words(c.cause, c.also) for c in g.causes],
                "limit_hit": g.limit_hit,
            }
            for g in d.groups
        ],
    }


def divergence_dict(
    jobs: Mapping[str, JobRanks], found: tuple[Divergence, ...], unnamed: Mapping[str, tuple[int, ...]]
) -> list[dict[str, object]]:
    """The JSON form (a run record's ``rank_divergence``) of a run's comparison (report.RunReport: its
    ``jobs``, ``divergence`` and ``unnamed``): one entry per job of two ranks or more, its ranks compared
    (those that compiled anything or, as torch counted, nothing), those not compared (:class:`JobRanks`),
    those with frames the log never named, and its diverging functions."""
    return [
        {
            "job": job,
            "ranks": list(ranks.compared),
            "silent_ranks": list(ranks.silent),
            "uncounted_ranks": list(ranks.uncounted),
            "lost_ranks": list(ranks.lost),
            "missing_ranks": [list(span) for span in ranks.missing],
            "world_size": ranks.world_size,
            "unnamed_ranks": list(unnamed.get(job, ())),
            "functions": [divergence_to_dict(d) for d in found if d.job == job],
        }
        for job, ranks in jobs.items()
        if ranks.size > 1
    ]
