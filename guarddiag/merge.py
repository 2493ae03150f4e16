"""Join what several processes' logs say into one run: tag a process's functions, add parse counters;
join the records of several nodes of one job, or of several jobs (a CI matrix), into one (``guarddiag merge``).

(Pieces of one process's log are not merged here: ``guarddiag parse`` reads them through one parser.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from guarddiag.ids import MAIN_PROCESS, CompileId, FrameId, Process
from guarddiag.logparse.parser import MAX_SAMPLES
from guarddiag.model import FunctionSummary, Job, JobProcess, JobRecord, ParseStats, Run

_Id = TypeVar("_Id", CompileId, FrameId)


def in_process(f: FunctionSummary, tag: Process) -> FunctionSummary:
    """The same function as compiled in another process (``child1``): its frame and compile ids carry the tag."""
    return replace(
        f,
        frame_ids=tuple(i.in_process(tag) for i in f.frame_ids),
        recompile_events=tuple(replace(e, compile_id=e.compile_id.in_process(tag)) for e in f.recompile_events),
        limit_hits=tuple(replace(h, compile_id=h.compile_id.in_process(tag) if h.compile_id else None) for h in f.limit_hits),
        failed_compiles=tuple(replace(c, compile_id=c.compile_id.in_process(tag)) for c in f.failed_compiles),
        torch_metrics=tuple(replace(m, compile_id=m.compile_id.in_process(tag) if m.compile_id else None) for m in f.torch_metrics),
        guard_entries=tuple(replace(e, compile_id=e.compile_id.in_process(tag) if e.compile_id else None) for e in f.guard_entries),
    )


def add_stats(a: ParseStats, b: ParseStats) -> ParseStats:
    """Parse counters of two logs read as one."""
    return ParseStats(
        a.lines + b.lines,
        a.torch_lines + b.torch_lines,
        a.unrecognized + b.unrecognized,
        (*a.unrecognized_samples, *b.unrecognized_samples)[:MAX_SAMPLES],
        tuple(dict.fromkeys((*a.unidentified_frames, *b.unidentified_frames))),
        trace_records=None if a.trace_records is None and b.trace_records is None else (a.trace_records or 0) + (b.trace_records or 0),
        trace_gaps=tuple(dict.fromkeys((*a.trace_gaps, *b.trace_gaps))),
    )


def retagged(f: FunctionSummary, process: Process) -> FunctionSummary:
    """The same function moved to another process label (``rank1`` -> ``py311/rank1``): every id follows,
    keeping the process its log's line named (``child1:rank1`` -> ``py311/child1:rank1``)."""

    def moved(i: _Id) -> _Id:
        return replace(i, process=process.containing(i.process.inner or MAIN_PROCESS))

    return replace(
        f,
        frame_ids=tuple(moved(i) for i in f.frame_ids),
        recompile_events=tuple(replace(e, compile_id=moved(e.compile_id)) for e in f.recompile_events),
        limit_hits=tuple(replace(h, compile_id=moved(h.compile_id) if h.compile_id else None) for h in f.limit_hits),
        failed_compiles=tuple(replace(c, compile_id=moved(c.compile_id)) for c in f.failed_compiles),
        torch_metrics=tuple(replace(m, compile_id=moved(m.compile_id) if m.compile_id else None) for m in f.torch_metrics),
        guard_entries=tuple(replace(e, compile_id=moved(e.compile_id) if e.compile_id else None) for e in f.guard_entries),
    )


class RankClash(ValueError):
    """A global rank in two records merged as nodes of one job: ``(rank label, first record, second record)``."""


def merge_runs(records: Sequence[tuple[str, str, Run]], jobs: bool) -> Run:
    """Records (label, path, run) as one report: nodes of one job (``jobs`` False: global ranks stay
    ``rankN``, any other process is put under its record's label) or jobs of a CI matrix (every
    process under its record's label). Raises :class:`RankClash` for a rank two nodes both have."""
    functions: list[FunctionSummary] = []
    processes: list[JobProcess] = []
    owner: dict[Process, str] = {}
    stats = ParseStats()
    for label, path, run in records:
        seen = _processes(run)
        for process, known in seen.items():
            new = _in_record(process, label, jobs)
            if new in owner:
                raise RankClash(process, owner[new], path)
            owner[new] = path
            processes.append(replace(known, process=new, node=label))
        functions += [retagged(f, _in_record(f.process, label, jobs)) for f in run.functions]
        stats = add_stats(stats, run.parse)
    runs = [r for _, _, r in records]
    versions = {r.torch_version for r in runs}
    return Run(
        functions=tuple(functions),
        parse=stats,
        torch_version=versions.pop() if len(versions) == 1 else None,
        source="merge",
        status=next((r.status for r in runs if r.status != "ok"), "ok"),
        late_hooks=tuple(h for r in runs for h in r.late_hooks),
        unobserved=tuple(u for r in runs for u in r.unobserved),
        stances=tuple(
            replace(u, process=_in_record(u.process, label, jobs))
            for label, _, r in records
            for u in r.stances
        ),
        job=Job(
            "jobs" if jobs else "nodes",
            tuple(processes),
            tuple(JobRecord(label, path, r.torch_version, r.status, r.script) for label, path, r in records),
        ),
    )


def _in_record(process: Process, label: str, jobs: bool) -> Process:
    """A process of record ``label`` in the merge: a global rank of a node stays itself (``rank1``), any
    other process, and every process of a job (``jobs``), goes under the label (``L/rank1``, ``L/main``)."""
    return process.in_record(label) if jobs or process.rank is None else process


def _processes(run: Run) -> dict[Process, JobProcess]:
    """The processes of a record: what its job says of them (a torchrun job guarddiag ran, a log dir,
    per-rank logs: every process, whether it compiled or not), else the processes its functions name."""
    own = run.job is not None and run.job.read_as in ("run", "log_dir", "per_rank")
    known = {p.process: p for p in run.job.processes} if own and run.job is not None else {}
    logs = (run.log_path,) if run.log_path else ()
    for f in run.functions:
        if f.process not in known:
            named_by = "prefix" if f.process.rank is not None else "record"
            known[f.process] = JobProcess(f.process, f.process.rank, None, named_by, logs)
    # The script's own process keeps torch's count of its compiles, which its log is checked against.
    if run.torch_compiles and MAIN_PROCESS not in known:
        known[MAIN_PROCESS] = JobProcess(MAIN_PROCESS, None, None, "record", logs)
    if MAIN_PROCESS in known:
        known[MAIN_PROCESS] = replace(known[MAIN_PROCESS], torch_compiles=run.torch_compiles)
    return known
