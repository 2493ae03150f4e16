"""Run records on disk: versioned JSON, written atomically (temp file + ``os.replace``).

Schema versions (``schema`` key):
  guarddiag.run/1 -- first version (docs/record-schema.md); a cause held its words (``subject``).
  guarddiag.run/2 -- a cause holds facts instead: its guard ``kind``, the ``guarded`` object (root, role,
                     path), ``aliased``, ``checked``, ``dim``, ``known``, ``reset``, ``inferred``; ``text`` is
                     torch's own. run/1 records still read (guarddiag/record1.py converts their causes).
                     Optional fields added since, which a reader that does not know them skips: a function's
                     ``torch_metrics`` (torch's own figures per compile, issue 27), a run's ``trace_path``,
                     and a function's ``guard_entries`` (each cache entry's guards as listed, issue 28);
                     a function's ``guard_times`` and a run's ``guards_measured``/``guards_unmeasured``
                     (each call's cache lookup measured as the script ran: run --measure-guards).
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import TypeVar

from guarddiag.errors import InputError
from guarddiag.filekinds import RUN_RECORD, wrong_file
from guarddiag.guardtime import guard_time_from_dict
from guarddiag.ids import CompileId, FrameId, Process, parse_place, place_text
from guarddiag.model import (
    HOOK_KINDS,
    JOB_READS,
    LIMIT_OUTCOMES,
    NAMED_BY,
    REFUSING_STANCES,
    SCHEMA,
    TRACE_GAPS,
    Cause,
    CompiledFor,
    DictKeys,
    DynamicDims,
    EntryGuards,
    FailedCompile,
    FunctionSummary,
    GraphBreak,
    GuardOrigin,
    Inferred,
    Job,
    JobProcess,
    JobRecord,
    LateHook,
    LimitHit,
    ParseStats,
    RecompileEvent,
    Refusal,
    Resume,
    Run,
    Source,
    StackSlot,
    StanceUse,
    TorchMetrics,
    Unobserved,
)
from guarddiag.render.escape import json_text

RUN1 = "guarddiag.run/1"
KNOWN_SCHEMAS = (RUN1, SCHEMA)


def run_to_dict(run: Run, rank_divergence: list[dict[str, object]], guard_cost: list[dict[str, object]] | None = None) -> dict[str, object]:
    """The JSON form of a run record (the documented contract); ``rank_divergence``: the JSON of the
    run's rank comparison, ``guard_cost`` of its functions' guard cost, as its report value holds them
    (report.record_dict: the store computes none)."""
    return {
        "schema": run.schema,
        "source": run.source,
        "status": run.status,
        "torch_version": run.torch_version,
        "exit_code": run.exit_code,
        "script": run.script,
        "module": run.module,
        "argv": list(run.argv),
        "flags": dict(run.flags),
        "config": dict(run.config),
        "flag_notes": list(run.flag_notes),
        "torch_compiles": run.torch_compiles,
        "unobserved": [asdict(u) for u in run.unobserved],
        "folder_recreated": run.folder_recreated,
        "late_hooks": [asdict(h) for h in run.late_hooks],
        "log_path": run.log_path,
        # Only a run that kept a TORCH_TRACE folder (run --trace) has it.
        **({"trace_path": run.trace_path} if run.trace_path is not None else {}),
        "duration_s": run.duration_s,
        "error": None if run.error is None else {"exception": run.error, "flags": list(run.error_flags)},
        "totals": {
            "compiles": run.compiles,
            "recompiles": run.recompiles,
            "limit_hits": run.limit_hits,
            "graph_breaks": run.graph_breaks,
            "compile_s": run.compile_s,
            "recompile_s": run.recompile_s,
            # Only a run whose script used a compiler stance that refuses to recompile has it.
            **({"refused_calls": run.refused_calls} if run.stances else {}),
        },
        "functions": [_function_to_dict(f) for f in run.functions],
        # Derived from functions[] like totals (read back from them, not from here).
        "rank_divergence": rank_divergence,
        # Derived from functions[].guard_entries and torch_metrics (read back from them, not from here).
        **({"guard_cost": guard_cost} if guard_cost else {}),
        "parse": {
            "lines": run.parse.lines,
            "torch_lines": run.parse.torch_lines,
            "unrecognized": run.parse.unrecognized,
            "unrecognized_samples": list(run.parse.unrecognized_samples),
            "unidentified_frames": [str(i) for i in run.parse.unidentified_frames],
            # Only a paste has it: a framed log's record is unchanged.
            **({"paste_messages": run.parse.paste_messages} if run.parse.paste_messages is not None else {}),
            # Only a TORCH_TRACE's record has it.
            **({"trace_records": run.parse.trace_records} if run.parse.trace_records is not None else {}),
            **({"trace_gaps": list(run.parse.trace_gaps)} if run.parse.trace_gaps else {}),
        },
        # Only a job read from several logs or records has it: a record of one log is unchanged.
        **({"job": _job_dict(run.job)} if run.job is not None else {}),
        **({"stances": [{**asdict(u), "process": str(u.process)} for u in run.stances]} if run.stances else {}),
        # Only a run asked to measure its cache lookups (run --measure-guards) has them.
        **({"guards_measured": run.guards_measured} if run.guards_measured is not None else {}),
        **({"guards_unmeasured": run.guards_unmeasured} if run.guards_unmeasured is not None else {}),
    }


def _job_dict(job: Job) -> dict[str, object]:
    """A job with its processes' labels as text."""
    return {**asdict(job), "processes": [{**asdict(p), "process": str(p.process)} for p in job.processes]}


def _function_to_dict(f: FunctionSummary) -> dict[str, object]:
    return {
        "name": f.name,
        "file": f.file,
        "line": f.line,
        "frame_ids": [str(i) for i in f.frame_ids],
        "compiles": f.compiles,
        "recompiles": f.recompiles,
        "limit_hit": f.limit_hit,
        "recompile_events": [
            {
                "compile_id": str(e.compile_id),
                "logged": e.logged,
                "causes": [_cause_dict(c) for c in e.causes],
                "also": [_cause_dict(c) for c in e.also],
            }
            for e in f.recompile_events
        ],
        "limit_hits": [
            {**asdict(h), "compile_id": place_text(h.compile_id), "cause": None if h.cause is None else _cause_dict(h.cause)}
            for h in f.limit_hits
        ],
        "graph_breaks": [{**asdict(g), "compile_id": place_text(g.compile_id)} for g in f.graph_breaks],
        "failed_compiles": [{**asdict(c), "compile_id": str(c.compile_id)} for c in f.failed_compiles],
        "compiled_for": [asdict(c) for c in f.compiled_for],
        "dynamic_dims": [{"source": d.source, "dims": list(d.dims)} for d in f.dynamic_dims],
        "compile_s": f.compile_s,
        "recompile_s": f.recompile_s,
        "recompile_limit": f.recompile_limit,
        # Only where several code objects share the name and line: a record of one is unchanged.
        **({"code_objects": f.code_objects} if f.code_objects != 1 else {}),
        # Only a resume function after a graph break has it.
        **({"resume": _resume_to_dict(f.resume)} if f.resume is not None else {}),
        # Only a function whose calls a compiler stance refused.
        **({"refused_calls": f.refused_calls, "refusals": [_refusal_dict(r) for r in f.refusals]} if f.refusals else {}),
        # Only where the run's ledger named who called it.
        **({"callers": list(f.callers)} if f.callers else {}),
        # Only where torch's record of the compiles holds its own figures (a run, torch >= 2.x of the ledger).
        **({"torch_metrics": [_metrics_dict(m) for m in f.torch_metrics]} if f.torch_metrics else {}),
        # Only where the log listed its guards (the ``guards`` channel).
        **({"guard_entries": [_entry_guards_dict(e) for e in f.guard_entries]} if f.guard_entries else {}),
        # Only where its cache lookups were measured as the script ran (run --measure-guards) and a call ran its code.
        **({"guard_times": [{**asdict(g), "frame": str(g.frame)} for g in f.guard_times]} if f.guard_times else {}),
    }


def _entry_guards_dict(e: EntryGuards) -> dict[str, object]:
    """One cache entry's guards as its listing showed them (issue 28)."""
    return {**asdict(e), "compile_id": place_text(e.compile_id), "origins": [asdict(o) for o in e.origins]}


def _metrics_dict(m: TorchMetrics) -> dict[str, object]:
    """torch's figures for one compile, each null where torch kept none."""
    values = asdict(m)
    values["compile_id"] = place_text(m.compile_id)
    values["user_contexts"] = None if m.user_contexts is None else list(m.user_contexts)
    return values


def _refusal_dict(r: Refusal) -> dict[str, object]:
    """A refusal with its cause in full (every field, unlike a recompile's), as records have kept it."""
    cause = None if r.cause is None else {**asdict(r.cause), "cache_entry": place_text(r.cause.cache_entry)}
    return {**asdict(r), "cause": cause}


def _resume_to_dict(r: Resume) -> dict[str, object]:
    return {"function": r.function, "line": r.line, "slots": [asdict(s) for s in r.slots]}


def run_from_dict(data: dict, origin: str = "record") -> Run:
    """Rebuild a run from its JSON form; refuses schemas it does not know and values of the wrong type."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in KNOWN_SCHEMAS:
        raise InputError(
            f"{origin}: record schema {schema!r} is not one this guarddiag reads ({', '.join(KNOWN_SCHEMAS)}); "
            "upgrade guarddiag or re-create the record"
        )
    try:
        if schema == RUN1:
            from guarddiag.record1 import run2_causes  # only an old record needs the converter

            data = run2_causes(data)
        return _run(data)
    except (AttributeError, KeyError, OverflowError, RecursionError, TypeError, ValueError) as exc:
        raise _not_a_record(origin, exc) from None


def _not_a_record(origin: str, exc: BaseException) -> InputError:
    if isinstance(exc, RecursionError):
        why = "nested too deeply"
    elif isinstance(exc, KeyError):
        why = f"missing key {exc.args[0]!r}"
    else:
        why = str(exc) or type(exc).__name__
    return InputError(f"{origin}: not a valid guarddiag run record ({why}); re-create it with `guarddiag run --out`")


# Type checks for the values a hand-edited record can get wrong: later stages trust the model's types.
def _str(value: object, where: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{where}: expected a string{' or null' if optional else ''}, got {value!r}"[:200])
    return value


def _whole(value: object, where: str, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: expected a whole number{' or null' if optional else ''}, got {value!r}"[:200])
    return value


def _seconds(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: expected a number of seconds >= 0 or null, got {value!r}"[:200])
    return float(value)


def _list(value: object, where: str) -> list:
    if not isinstance(value, list):
        raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    return tuple(str(_str(v, f"{where}[{i}]")) for i, v in enumerate(_list(value, where)))


def _unobserved(value: object, where: str) -> Unobserved:
    """An unobserved process; a record before issue 24 holds only its command line (a string)."""
    if isinstance(value, str):
        return Unobserved(argv=value)
    u = _object(value, where)
    torch = u.get("torch")
    return Unobserved(
        argv=str(_str(u.get("argv", ""), f"{where}.argv")),
        pid=_whole(u.get("pid"), f"{where}.pid", optional=True),
        reason=str(_str(u.get("reason", ""), f"{where}.reason")),
        torch=torch if isinstance(torch, bool) else None,
    )


def _run(data: dict) -> Run:
    p = _object(data.get("parse", {}), "parse")
    error = _error(data)
    flags = _object(data.get("flags", {}), "flags")
    return Run(
        functions=tuple(
            _function(_object(f, f"functions[{i}]"), f"functions[{i}]") for i, f in enumerate(_list(data["functions"], "functions"))
        ),
        parse=ParseStats(
            _whole(p.get("lines", 0), "parse.lines") or 0,
            _whole(p.get("torch_lines", 0), "parse.torch_lines") or 0,
            _whole(p.get("unrecognized", 0), "parse.unrecognized") or 0,
            _strings(p.get("unrecognized_samples", []), "parse.unrecognized_samples"),
            tuple(FrameId.parse(i) for i in _strings(p.get("unidentified_frames", []), "parse.unidentified_frames")),
            _whole(p.get("paste_messages"), "parse.paste_messages", optional=True),
            _whole(p.get("trace_records"), "parse.trace_records", optional=True),
            tuple(g for g in _strings(p.get("trace_gaps", []), "parse.trace_gaps") if g in TRACE_GAPS),
        ),
        torch_version=_str(data.get("torch_version"), "torch_version", optional=True),
        exit_code=_whole(data.get("exit_code"), "exit_code", optional=True),
        source=str(_str(data.get("source", "parse"), "source")),
        status=str(_str(data.get("status", "ok"), "status")),
        script=_str(data.get("script"), "script", optional=True),
        module=_str(data.get("module"), "module", optional=True),
        argv=_strings(data.get("argv", []), "argv"),
        flags={str(k): str(_str(v, f"flags.{k}")) for k, v in flags.items()},
        config=dict(_object(data.get("config", {}), "config")),
        flag_notes=_strings(data.get("flag_notes", []), "flag_notes"),
        torch_compiles=_whole(data.get("torch_compiles"), "torch_compiles", optional=True),
        unobserved=tuple(_unobserved(u, f"unobserved[{i}]") for i, u in enumerate(_list(data.get("unobserved", []), "unobserved"))),
        folder_recreated=data.get("folder_recreated", False) is True,
        late_hooks=tuple(late_hook_from_dict(h, f"late_hooks[{i}]") for i, h in enumerate(_list(data.get("late_hooks", []), "late_hooks"))),
        log_path=_str(data.get("log_path"), "log_path", optional=True),
        trace_path=_str(data.get("trace_path"), "trace_path", optional=True),
        duration_s=_seconds(data.get("duration_s"), "duration_s"),
        error=_str(error.get("exception"), "error.exception", optional=True),
        error_flags=_strings(error.get("flags", []), "error.flags"),
        job=_job(_object(data["job"], "job")) if data.get("job") is not None else _ranks_job(data.get("ranks")),
        stances=tuple(_stance_use(u, f"stances[{i}]") for i, u in enumerate(_list(data.get("stances", []), "stances"))),
        guards_measured=_flag(data.get("guards_measured"), "guards_measured"),
        guards_unmeasured=_str(data.get("guards_unmeasured"), "guards_unmeasured", optional=True),
    )


def _flag(value: object, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{where}: expected true, false or null, got {value!r}"[:200])
    return value


def _job(raw: dict) -> Job:
    read_as = str(_str(raw.get("read_as"), "job.read_as"))
    if read_as not in JOB_READS:
        raise ValueError(f"job.read_as: expected one of {', '.join(JOB_READS)}, got {read_as!r}"[:200])
    processes = []
    for i, p in enumerate(_list(raw.get("processes", []), "job.processes")):
        values = dict(_object(p, f"job.processes[{i}]"))
        values["logs"] = _strings(values.get("logs", []), f"job.processes[{i}].logs")
        values["process"] = _process(values.get("process"), f"job.processes[{i}].process")
        process = _typed(JobProcess, values, f"job.processes[{i}]")
        if process.named_by not in NAMED_BY:
            raise ValueError(f"job.processes[{i}].named_by: expected one of {', '.join(NAMED_BY)}, got {process.named_by!r}"[:200])
        processes.append(process)
    records = tuple(_typed(JobRecord, r, f"job.records[{i}]") for i, r in enumerate(_list(raw.get("records", []), "job.records")))
    return Job(read_as, tuple(processes), records, _strings(raw.get("skipped", []), "job.skipped"))


def _function(f: dict, where: str) -> FunctionSummary:
    compiles = _whole(f["compiles"], f"{where}.compiles") or 0
    if compiles < 0:
        raise ValueError(f"{where}.compiles: expected a whole number >= 0, got {compiles}")
    return FunctionSummary(
        name=str(_str(f["name"], f"{where}.name")),
        file=str(_str(f["file"], f"{where}.file")),
        line=_whole(f["line"], f"{where}.line", optional=True),
        frame_ids=tuple(FrameId.parse(i) for i in _strings(f.get("frame_ids", []), f"{where}.frame_ids")),
        compiles=compiles,
        recompile_events=tuple(
            _event_from_dict(_object(e, f"{where}.recompile_events[{i}]"), f"{where}.recompile_events[{i}]")
            for i, e in enumerate(_list(f["recompile_events"], f"{where}.recompile_events"))
        ),
        limit_hits=tuple(
            _limit_hit(h, f"{where}.limit_hits[{i}]") for i, h in enumerate(_list(f.get("limit_hits", []), f"{where}.limit_hits"))
        ),
        graph_breaks=tuple(
            _typed(GraphBreak, _placed(g, f"{where}.graph_breaks[{i}]"), f"{where}.graph_breaks[{i}]")
            for i, g in enumerate(_list(f.get("graph_breaks", []), f"{where}.graph_breaks"))
        ),
        failed_compiles=tuple(
            _typed(FailedCompile, _compiled(c, f"{where}.failed_compiles[{i}]"), f"{where}.failed_compiles[{i}]")
            for i, c in enumerate(_list(f.get("failed_compiles", []), f"{where}.failed_compiles"))
        ),
        compiled_for=tuple(
            _typed(CompiledFor, c, f"{where}.compiled_for[{i}]")
            for i, c in enumerate(_list(f.get("compiled_for", []), f"{where}.compiled_for"))
        ),
        dynamic_dims=tuple(
            _dynamic_dims(d, f"{where}.dynamic_dims[{i}]") for i, d in enumerate(_list(f.get("dynamic_dims", []), f"{where}.dynamic_dims"))
        ),
        # Records written before compile times were kept have none: not known.
        compile_s=_seconds(f.get("compile_s"), f"{where}.compile_s"),
        recompile_s=_seconds(f.get("recompile_s"), f"{where}.recompile_s"),
        recompile_limit=_whole(f.get("recompile_limit"), f"{where}.recompile_limit", optional=True),
        code_objects=_code_objects(f, where, compiles),
        resume=_resume(f["resume"], f"{where}.resume") if f.get("resume") is not None else None,
        refusals=tuple(_refusal(r, f"{where}.refusals[{i}]") for i, r in enumerate(_list(f.get("refusals", []), f"{where}.refusals"))),
        callers=_strings(f.get("callers", []), f"{where}.callers"),
        torch_metrics=tuple(
            _torch_metrics(m, f"{where}.torch_metrics[{i}]")
            for i, m in enumerate(_list(f.get("torch_metrics", []), f"{where}.torch_metrics"))
        ),
        guard_entries=tuple(
            _entry_guards(e, f"{where}.guard_entries[{i}]")
            for i, e in enumerate(_list(f.get("guard_entries", []), f"{where}.guard_entries"))
        ),
        guard_times=tuple(
            guard_time_from_dict(g, f"{where}.guard_times[{i}]")
            for i, g in enumerate(_list(f.get("guard_times", []), f"{where}.guard_times"))
        ),
    )


def _entry_guards(raw: object, where: str) -> EntryGuards:
    """One cache entry's guards: counts whole, torch's latency microseconds >= 0, each null where not known
    (records before issue 28 have none)."""
    values = _object(raw, where)
    entry = values.get("compile_id")
    rows = _list(values.get("origins", []), f"{where}.origins")
    return EntryGuards(
        None if entry is None else _compile_id(entry, f"{where}.compile_id"),
        _whole(values.get("leaves"), f"{where}.leaves", optional=True),
        _microseconds(values.get("latency_us"), f"{where}.latency_us"),
        tuple(_origin(o, f"{where}.origins[{i}]") for i, o in enumerate(rows)),
    )


def _origin(raw: object, where: str) -> GuardOrigin:
    values = _object(raw, where)
    rest = values.get("rest", False)
    if not isinstance(rest, bool):
        raise TypeError(f"{where}.rest: expected true or false, got {rest!r}"[:200])
    return GuardOrigin(
        str(_str(values.get("source", ""), f"{where}.source")),
        _whole(values.get("guards"), f"{where}.guards") or 0,
        _whole(values.get("members"), f"{where}.members", optional=True),
        rest,
    )


def _microseconds(value: object, where: str) -> float | None:
    """A figure of torch's in microseconds: a finite number >= 0, or null (not known)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if value is not None and not (number and math.isfinite(value) and value >= 0):  # type: ignore[arg-type,operator]
        raise ValueError(f"{where}: expected microseconds >= 0 or null, got {value!r}"[:200])
    return None if value is None else float(value)  # type: ignore[arg-type]


def _torch_metrics(raw: object, where: str) -> TorchMetrics:
    """torch's figures for one compile: each null where torch kept none (records before issue 27 have none)."""
    values = _object(raw, where)
    entry = values.get("compile_id")
    contexts = values.get("user_contexts")
    return TorchMetrics(
        None if entry is None else _compile_id(entry, f"{where}.compile_id"),
        _str(values.get("recompile_reason"), f"{where}.recompile_reason", optional=True),
        _whole(values.get("guard_count"), f"{where}.guard_count", optional=True),
        _microseconds(values.get("guard_latency_us"), f"{where}.guard_latency_us"),
        _whole(values.get("cache_size"), f"{where}.cache_size", optional=True),
        _whole(values.get("accumulated_cache_size"), f"{where}.accumulated_cache_size", optional=True),
        None if contexts is None else _strings(contexts, f"{where}.user_contexts"),
        _whole(values.get("graph_breaks"), f"{where}.graph_breaks", optional=True),
    )


def _resume(raw: object, where: str) -> Resume:
    """A resume function's user function, line and stack slots (records before issue 25 have none)."""
    values = dict(_object(raw, where))
    slots = _list(values.get("slots", []), f"{where}.slots")
    values["slots"] = tuple(_typed(StackSlot, s, f"{where}.slots[{i}]") for i, s in enumerate(slots))
    return _typed(Resume, values, where)


def _code_objects(f: dict, where: str, compiles: int) -> int:
    """How many code objects a function's summary joins (1 unless the record says more)."""
    count = _whole(f.get("code_objects", 1), f"{where}.code_objects") or 0
    if not 1 <= count <= max(compiles, 1):
        raise ValueError(f"{where}.code_objects: expected a whole number from 1 to its compiles ({compiles}), got {count}")
    return count


def _ranks_job(raw: object) -> Job | None:
    """A record written before a run's ranks were its job's processes kept them under ``ranks``."""
    ranks = _list(raw or [], "ranks")
    processes = []
    for i, r in enumerate(ranks):
        values = dict(_object(r, f"ranks[{i}]"))
        values.update(local_rank=values.get("local_rank"), named_by="environment", logs=())
        values["process"] = _process(values.get("process"), f"ranks[{i}].process")
        processes.append(_typed(JobProcess, values, f"ranks[{i}]"))
    return Job("run", tuple(processes)) if processes else None


def _dynamic_dims(raw: object, where: str) -> DynamicDims:
    values = _object(raw, where)
    dims = _list(values.get("dims", []), f"{where}.dims")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise TypeError(f"{where}.dims: expected dimension numbers, got {dims!r}"[:200])
    return DynamicDims(str(_str(values.get("source", ""), f"{where}.source")), tuple(dims))


def _compile_id(value: object, where: str) -> CompileId:
    """A compile id as records write it (``0/1``, ``rank1:0/1_1``), parsed."""
    cid = CompileId.parse(_str(value, where))
    if cid is None:
        raise ValueError(f"{where}: expected a compile id (0/1, rank1:0/1), got {value!r}"[:200])
    return cid


def _process(value: object, where: str) -> Process:
    """A process label as records write it (``rank1``, ``py311/rank0``, ``""`` the main process), parsed."""
    text = str(_str(value, where))
    try:
        return Process.parse(text)
    except ValueError:
        raise ValueError(f"{where}: expected a process label (rank1, child1, L/rank1, or empty), got {text!r}"[:200]) from None


def _compiled(raw: object, where: str) -> dict:
    """A record's object with its ``compile_id`` parsed (a failed compile's)."""
    values = dict(_object(raw, where))
    values["compile_id"] = _compile_id(values.get("compile_id"), f"{where}.compile_id")
    return values


def _placed(raw: object, where: str) -> dict:
    """A record's object with its ``compile_id`` read as a place (a limit hit's, a graph break's: a compile id,
    a bare process or null)."""
    values = dict(_object(raw, where))
    values["compile_id"] = parse_place(_str(values.get("compile_id"), f"{where}.compile_id", optional=True))
    return values


def _limit_hit(raw: object, where: str) -> LimitHit:
    values = _placed(raw, where)
    cause = values.pop("cause", None)
    hit = _typed(LimitHit, values, where)
    if hit.outcome not in LIMIT_OUTCOMES:
        raise ValueError(f"{where}.outcome: expected one of {', '.join(LIMIT_OUTCOMES)}, got {hit.outcome!r}"[:200])
    return replace(hit, cause=None if cause is None else cause_from_dict(cause, f"{where}.cause"))


def _refusal(raw: object, where: str) -> Refusal:
    values = dict(_object(raw, where))
    cause = values.pop("cause", None)
    values["reasons"] = _strings(values.get("reasons", []), f"{where}.reasons")
    refusal = _typed(Refusal, values, where)
    _stance(refusal.stance, f"{where}.stance")
    if refusal.calls < 1 or refusal.entries < 0:
        raise ValueError(f"{where}: expected calls >= 1 and entries >= 0, got {refusal.calls} and {refusal.entries}")
    return replace(refusal, cause=None if cause is None else cause_from_dict(cause, f"{where}.cause"))


def _stance_use(raw: object, where: str) -> StanceUse:
    values = dict(_object(raw, where))
    if "process" in values:
        values["process"] = _process(values["process"], f"{where}.process")
    use = _typed(StanceUse, values, where)
    _stance(use.stance, f"{where}.stance")
    if not isinstance(use.counted, bool):
        raise TypeError(f"{where}.counted: expected true or false, got {use.counted!r}"[:200])
    return use


def _stance(stance: str, where: str) -> None:
    if stance not in REFUSING_STANCES:
        raise ValueError(f"{where}: expected one of {', '.join(REFUSING_STANCES)}, got {stance!r}"[:200])


def late_hook_from_dict(raw: object, where: str) -> LateHook:
    """A late hook from its JSON form (a record's ``late_hooks[]``, the child's ``hooks.jsonl``)."""
    hook = _typed(LateHook, raw, where)
    if hook.kind not in HOOK_KINDS:
        raise ValueError(f"{where}.kind: expected one of {', '.join(HOOK_KINDS)}, got {hook.kind!r}"[:200])
    return hook


# The JSON types of each field of the small records (their annotations, as ``from __future__`` leaves them).
_FIELD_CHECKS: dict[str, tuple[Callable[[object, str, bool], object], bool]] = {
    "str": (_str, False),
    "int": (_whole, False),
    "str | None": (_str, True),
    "int | None": (_whole, True),
}
_T = TypeVar("_T")


def _typed(cls: type[_T], raw: object, where: str) -> _T:
    """An instance of the dataclass ``cls`` from a JSON object, each field checked against its annotation."""
    values = _object(raw, where)
    for f in fields(cls):  # type: ignore[arg-type]
        check = _FIELD_CHECKS.get(str(f.type))
        if check is not None and f.name in values:
            check[0](values[f.name], f"{where}.{f.name}", check[1])
    return cls(**values)


# A cause's fields written only when set: most causes are no size guard, no dict's keys, no aliasing, read
# from torch's text (not inferred), known and no cache reset.
_CAUSE_OPTIONAL = ("shape", "condition", "keys", "aliased", "checked", "dim", "reset", "inferred")
# A source's fields written only when set: most are a name of the frame's code with a path.
_SOURCE_OPTIONAL = ("path", "module", "held", "line")


def _cause_dict(c: Cause) -> dict:
    values = {k: v for k, v in asdict(c).items() if k not in _CAUSE_OPTIONAL or v or v == 0 and v is not False}
    values["cache_entry"] = place_text(c.cache_entry)
    if c.guarded is not None:
        values["guarded"] = {k: v for k, v in asdict(c.guarded).items() if k not in _SOURCE_OPTIONAL or v or v == 0}
    return values


def cause_from_dict(raw: object, where: str = "cause") -> Cause:
    """A cause from its JSON form: ``keys`` (a dict's keys before and after, each a list of keys or null), the
    ``guarded`` source, ``aliased`` names and ``inferred`` expressions typed."""
    values = dict(_object(raw, where))
    keys = values.pop("keys", None)
    guarded = values.pop("guarded", None)
    inferred = values.pop("inferred", None)
    aliased = _strings(values.pop("aliased", []), f"{where}.aliased")
    entry = values.get("cache_entry")
    values["cache_entry"] = None if entry is None else _compile_id(entry, f"{where}.cache_entry")
    for flag in ("known", "reset"):
        if not isinstance(values.get(flag, False), bool):
            raise TypeError(f"{where}.{flag}: expected true or false, got {values[flag]!r}"[:200])
    cause = replace(
        _typed(Cause, values, where),
        guarded=None if guarded is None else _typed(Source, guarded, f"{where}.guarded"),
        aliased=aliased,
        inferred=None if inferred is None else _typed(Inferred, inferred, f"{where}.inferred"),
    )
    return cause if keys is None else replace(cause, keys=_dict_keys(keys, f"{where}.keys"))


def _dict_keys(raw: object, where: str) -> DictKeys:
    values = _object(raw, where)
    ordered = values.get("ordered", True)
    if not isinstance(ordered, bool):
        raise TypeError(f"{where}.ordered: expected true or false, got {ordered!r}"[:200])
    sides = []
    for side in ("before", "after"):
        keys = values.get(side)
        if keys is not None and not all(isinstance(k, str) for k in _list(keys, f"{where}.{side}")):
            raise TypeError(f"{where}.{side}: expected a list of keys or null, got {keys!r}"[:200])
        sides.append(None if keys is None else tuple(keys))
    return DictKeys(sides[0], sides[1], ordered)


def _error(data: dict) -> dict:
    error = data.get("error") or {}
    if not isinstance(error, dict):
        raise TypeError(f"error: expected an object or null, got {type(error).__name__}")
    return error


def _event_from_dict(e: dict, where: str) -> RecompileEvent:
    causes = tuple(cause_from_dict(c, f"{where}.causes[{i}]") for i, c in enumerate(_list(e["causes"], f"{where}.causes")))
    if not causes:
        # Every event the parser makes has a cause (unknown, at worst); an empty list is a hand edit.
        raise ValueError(f"{where}: recompile event {e['compile_id']!r} has no causes")
    logged = e["logged"]
    if not isinstance(logged, bool):
        raise TypeError(f"{where}.logged: expected true or false, got {logged!r}"[:200])
    also = tuple(cause_from_dict(c, f"{where}.also[{i}]") for i, c in enumerate(_list(e.get("also", []), f"{where}.also")))
    return RecompileEvent(_compile_id(e["compile_id"], f"{where}.compile_id"), logged, causes, also)


def write_atomic(path: Path, text: str, follow: bool = True) -> None:
    """Write a file so that readers see the old content or the new, never a torn one.

    A symlink is followed: its target is replaced and the link kept. A target that exists and is
    not a regular file (``/dev/null``, a FIFO, ``/dev/stdout`` on a pipe) is written to directly, as
    the shell's ``>`` would: replacing it would swap the device for a file and hide errors (ENOSPC).
    A new file gets the usual ``0o666 & ~umask``; a replaced one keeps its mode. ``follow=False`` (a file
    only guarddiag writes, in its own folder): whatever is at ``path``, a link or a FIFO, is replaced.
    """
    try:
        st = os.stat(path, follow_symlinks=follow)  # follows /dev/stdout's /proc/self/fd/1 (a pipe, say) too
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if st is not None and not stat.S_ISREG(st.st_mode) and follow:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    target = Path(os.path.realpath(path)) if follow else Path(os.path.abspath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(target)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if st is not None and stat.S_ISREG(st.st_mode):
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _create_temp(target: Path) -> tuple[int, str]:
    """A new file beside ``target``, created 0o666 so that the kernel applies the umask (mkstemp's is 0o600)."""
    while True:
        # os.urandom, not secrets: importing secrets (hmac, hashlib, random) costs every command ~5 ms at start-up.
        tmp = str(target.parent / f".{target.name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue


# Why a write failed for want of room, and what frees it: said as such, not as a wrong path.
_NO_ROOM = {
    errno.ENOSPC: ("the disk is full", "free some space on it"),
    errno.EDQUOT: ("the disk quota is used up", "free some space or raise the quota"),
    errno.EFBIG: ("the file is larger than the file size limit", "raise the limit (ulimit -f)"),
}


def write_failure(exc: OSError) -> tuple[str, str | None]:
    """Why a file could not be written (``ENOSPC: No space left on device, the disk is full``), and what
    to do when it is a lack of room (None otherwise: the caller knows the way out)."""
    code = errno.errorcode.get(exc.errno or 0, "error")
    text = exc.strerror or str(exc)
    room = _NO_ROOM.get(exc.errno or 0)
    if room is None:
        return f"{code}: {text}", None
    return f"{code}: {text}, {room[0]}", room[1]


def save_record(record: dict[str, object], path: Path) -> None:
    """Write a run record (:func:`run_to_dict`) as versioned JSON, atomically."""
    # `--out /dev/stdout` puts the record on stdout, a CI step may cat it: escaped as the json format's.
    write_atomic(path, json_text(json.dumps(record, indent=2)) + "\n")


def load_run(path: Path) -> Run:
    """Read a run record written by :func:`save_record`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such run record; create one with `guarddiag run SCRIPT --out {path}`") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the run record ({exc.strerror}); give a record file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(wrong_file(path, "record") or f"{path}: not valid JSON ({exc}); re-create it with `guarddiag run --out`") from None
    except RecursionError as exc:
        raise _not_a_record(str(path), exc) from None
    if not (isinstance(data, dict) and str(data.get("schema", "")).startswith(RUN_RECORD + "/")):
        # Another of guarddiag's files (a check report, a baseline) is named as such, with the command that reads it.
        wrong = wrong_file(path, "record")
        if wrong:
            raise InputError(wrong)
    return run_from_dict(data, str(path))
