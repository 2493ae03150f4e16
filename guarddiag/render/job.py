"""The words for a distributed job read from several logs or records: how the inputs were read, which
process is which (node, rank, local rank, log), and what could not be known."""

from __future__ import annotations

import os

from guarddiag.ids import rank_of
from guarddiag.model import Job, JobProcess, Run

__all__ = ["job_notes", "process_headers", "process_rows"]

_READ = {
    "log_dir": "read torchrun's --log-dir: {n} workers, each its own process",
    "per_rank": "read {n} per-rank logs: the files show one [rankN]: prefix each (files of one rank are pieces of its log, in order)",
    "pieces": "read the files as pieces of one log, in the order given (as cat joins them): they do not each show one rank "
    "of their own ([rankN]: prefixes)",
    "nodes": "merged {records} records as the nodes of one job: global ranks are kept, other processes are labelled by record",
    "jobs": "merged {records} records as separate jobs (--jobs, a CI matrix): every process is labelled by its record",
}


def job_notes(run: Run) -> list[str]:
    """Notes under the headline: how the inputs were read and whatever rank is not known."""
    notes = []
    job = run.job
    if job is not None:
        notes.append(_READ[job.read_as].format(n=len(job.processes), records=len(job.records)))
        notes += [f"not read: {a} (an earlier attempt of a restarted job; give its directory to read it)" for a in job.skipped]
        notes += [_unknown_rank(p) for p in job.processes if p.named_by in ("directory", "position")]
        notes += [
            f"{r.label} ({r.path}): its run did not finish cleanly (status {r.status}): its counts cover what ran before that"
            for r in job.records
            if r.status != "ok"
        ]
        versions = {r.torch_version for r in job.records}
        if len(versions) > 1:
            shown = ", ".join(f"{r.label}: {r.torch_version or 'unknown'}" for r in job.records)
            notes.append(f"the records come from different torch versions: {shown}")
    if run.source == "parse" and (job is None or job.read_as == "pieces"):
        unranked = sorted({f.name for f in run.functions if not f.rank})
        if unranked and any(rank_of(f.rank) is not None for f in run.functions):
            notes.append(
                f"{', '.join(unranked)} compiled without a [rankN]: prefix (before init_process_group): their lines may come "
                "from any rank, and lines of several ranks with the same compile id count once, so their counts are not per rank; "
                "parse the per-rank files (torchrun --log-dir with --redirects) to tell them apart"
            )
    return notes


def _unknown_rank(p: JobProcess) -> str:
    where = os.path.dirname(p.logs[0]) if p.named_by == "directory" and p.logs else ", ".join(p.logs)
    why = (
        "its log shows no [rankN]: prefix (nothing logged after init_process_group), and torchrun's log dir does not record "
        "the node rank"
        if p.named_by == "directory"
        else "it shows no [rankN]: prefix"
    )
    return f"rank not known for {where}: {why}; reported as [{p.process}]"


def _shown(log: str, run: Run) -> str:
    """A worker's log under the log dir given to parse, relative to it (``job1_x/attempt_0/1/stderr.log``)."""
    if run.job is not None and run.job.read_as == "log_dir" and run.log_path and log.startswith(run.log_path.rstrip("/") + "/"):
        return os.path.relpath(log, run.log_path)
    return log


def process_headers(job: Job) -> list[str]:
    """The columns of the process table."""
    return ["process", *(["node"] if job.records else []), "rank", "local rank", "compiles", "recompiles", "log"]


def process_rows(run: Run) -> list[list[object]]:
    """One row per process of the job: its label, node, ranks (blank: not known), counts and first log."""
    assert run.job is not None
    rows = []
    for p in run.job.processes:
        mine = [f for f in run.functions if f.rank == p.process]
        rows.append([
            p.process,
            *([p.node or ""] if run.job.records else []),
            "" if p.rank is None else p.rank,
            "" if p.local_rank is None else p.local_rank,
            sum(f.compiles for f in mine),
            sum(f.recompiles for f in mine),
            _shown(p.logs[0], run) if p.logs else "",
        ])
    return rows
