"""The words for a distributed job read from several logs or records: how the inputs were read, which
process is which (node, rank, local rank, log), and what could not be known."""

from __future__ import annotations

import os

from guarddiag.model import Job, JobProcess, Run
from guarddiag.render.words import function_label

__all__ = ["job_notes", "log_line", "logs_at", "process_headers", "process_rows"]

_READ = {
    "run": "the script started {n} processes, each read from its own torch log: ranks named by the RANK their launcher gave "
    "them (or torch's [rankN]: prefix), any other process childN in start order",
    "log_dir": "read torchrun's --log-dir: {n} workers, each its own process",
    "per_rank": "read {n} per-rank logs: the files show one [rankN]: prefix each (files of one rank are pieces of its log, in order)",
    "pieces": "read the files as pieces of one log, in the order given (as cat joins them): they do not each show one rank "
    "of their own ([rankN]: prefixes)",
    "nodes": "merged {records} records as the nodes of one job: global ranks are kept, other processes are labelled by record",
    "jobs": "merged {records} records as separate jobs (--jobs, a CI matrix): every process is labelled by its record",
    "trace": "read {n} TORCH_TRACE files, a process each: named by the rank in the file's name or in its records (torch "
    "writes it once torch.distributed is initialized), else by its place",
}


def job_notes(run: Run) -> list[str]:
    """Notes under the headline: how the inputs were read and whatever rank is not known."""
    notes = []
    job = run.job
    if job is not None:
        notes.append(_READ[job.read_as].format(n=len(job.processes), records=len(job.records)))
        notes += [f"not read: {a} (an earlier attempt of a restarted job; give its directory to read it)" for a in job.skipped]
        notes += [_unknown_rank(p, job.read_as) for p in job.processes if p.named_by in ("directory", "position")]
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
        unranked = sorted({function_label(f, process=False) for f in run.functions if not f.process and f.name})
        if unranked and any(f.process.rank is not None for f in run.functions):
            notes.append(
                f"{', '.join(unranked)} compiled without a [rankN]: prefix (before init_process_group): their lines may come "
                "from any rank, and lines of several ranks with the same compile id count once, so their counts are not per rank; "
                "parse the per-rank files (torchrun --log-dir with --redirects) to tell them apart"
            )
    return notes


def _unknown_rank(p: JobProcess, read_as: str) -> str:
    where = os.path.dirname(p.logs[0]) if p.named_by == "directory" and p.logs else ", ".join(p.logs)
    why = (
        "its log shows no [rankN]: prefix (nothing logged after init_process_group), and torchrun's log dir does not record "
        "the node rank"
        if p.named_by == "directory"
        else "its file name holds no rank_N_ (torch.distributed was not initialized at its first record)"
        if read_as == "trace"
        else "it shows no [rankN]: prefix"
    )
    return f"rank not known for {where}: {why}; reported as [{p.process}]"


def _shown(log: str, run: Run) -> str:
    """A worker's log relative to the log dir given to parse (``job1_x/attempt_0/1/stderr.log``), or to
    the run folder of a job guarddiag ran (``torch.child-4242.log``)."""
    if run.job is None or not run.log_path:
        return log
    top = run.log_path if run.job.read_as == "log_dir" else os.path.dirname(run.log_path) if run.job.read_as == "run" else None
    if top and log.startswith(top.rstrip("/") + "/"):
        return os.path.relpath(log, top)
    return log


def _node(p: JobProcess) -> str:
    """Where a process ran: the record it came from in a merge, else its host; its node rank in brackets."""
    where = p.node or p.host
    if p.node_rank is None:
        return where
    return f"{where} (node {p.node_rank})" if where else f"node {p.node_rank}"


def _has_nodes(job: Job) -> bool:
    """The job's processes ran on more than one node (or come from merged records): a node column says where."""
    return bool(job.records) or len({(p.host, p.node_rank) for p in job.processes if p.host or p.node_rank is not None}) > 1


def log_line(run: Run) -> str | None:
    """The report's last line: where the run's torch logs are (one file; for a job guarddiag ran, the
    folder of one log per process). None for a merge, whose logs are in its records' folders."""
    if run.source == "merge":
        return None
    where = logs_at(run)
    if where and run.job is not None and run.job.read_as == "run":
        return f"{where} (one per process; the table above names each)"
    return where


def logs_at(run: Run) -> str | None:
    """``torch log: PATH``, or ``torch logs: FOLDER`` for a job guarddiag ran (one log per process)."""
    if not run.log_path:
        return None
    if run.job is not None and run.job.read_as == "run":
        return f"torch logs: {os.path.dirname(run.log_path)}"
    if run.parse.trace_records is not None:
        return f"torch trace (TORCH_TRACE): {run.log_path}"
    return f"torch log: {run.log_path}"


def process_headers(job: Job) -> list[str]:
    """The columns of the process table."""
    return ["process", *(["node"] if _has_nodes(job) else []), "rank", "local rank", "compiles", "recompiles", "log"]


def process_rows(run: Run) -> list[list[object]]:
    """One row per process of the job: its label, node, ranks (blank: not known), counts and first log."""
    assert run.job is not None
    rows = []
    for p in run.job.processes:
        mine = [f for f in run.functions if f.process == p.process]
        rows.append([
            str(p.process),
            *([_node(p)] if _has_nodes(run.job) else []),
            "" if p.rank is None else p.rank,
            "" if p.local_rank is None else p.local_rank,
            sum(f.compiles for f in mine),
            sum(f.recompiles for f in mine),
            _shown(p.logs[0], run) if p.logs else "",
        ])
    return rows
