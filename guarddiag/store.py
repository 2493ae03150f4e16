"""Run records on disk: versioned JSON, written atomically (temp file + ``os.replace``).

Schema versions (``schema`` key):
  guarddiag.run/1 -- first version (docs/record-schema.md).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from guarddiag.errors import InputError
from guarddiag.model import (
    SCHEMA,
    Cause,
    FunctionSummary,
    GraphBreak,
    LimitHit,
    ParseStats,
    RecompileEvent,
    Run,
)

KNOWN_SCHEMAS = (SCHEMA,)


def run_to_dict(run: Run) -> dict[str, object]:
    """The JSON form of a run record (the documented contract)."""
    return {
        "schema": run.schema,
        "source": run.source,
        "status": run.status,
        "torch_version": run.torch_version,
        "exit_code": run.exit_code,
        "script": run.script,
        "argv": list(run.argv),
        "flags": dict(run.flags),
        "config": dict(run.config),
        "flag_notes": list(run.flag_notes),
        "log_path": run.log_path,
        "duration_s": run.duration_s,
        "error": None if run.error is None else {"exception": run.error, "flags": list(run.error_flags)},
        "totals": {
            "compiles": run.compiles,
            "recompiles": run.recompiles,
            "limit_hits": run.limit_hits,
            "graph_breaks": run.graph_breaks,
        },
        "functions": [_function_to_dict(f) for f in run.functions],
        "parse": {
            "lines": run.parse.lines,
            "torch_lines": run.parse.torch_lines,
            "unrecognized": run.parse.unrecognized,
            "unrecognized_samples": list(run.parse.unrecognized_samples),
            "unidentified_frames": list(run.parse.unidentified_frames),
        },
    }


def _function_to_dict(f: FunctionSummary) -> dict[str, object]:
    return {
        "name": f.name,
        "file": f.file,
        "line": f.line,
        "frame_ids": list(f.frame_ids),
        "compiles": f.compiles,
        "recompiles": f.recompiles,
        "limit_hit": f.limit_hit,
        "recompile_events": [
            {"compile_id": e.compile_id, "logged": e.logged, "causes": [asdict(c) for c in e.causes]}
            for e in f.recompile_events
        ],
        "limit_hits": [asdict(h) for h in f.limit_hits],
        "graph_breaks": [asdict(g) for g in f.graph_breaks],
    }


def run_from_dict(data: dict, origin: str = "record") -> Run:
    """Rebuild a run from its JSON form; refuses schemas it does not know."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in KNOWN_SCHEMAS:
        raise InputError(
            f"{origin}: record schema {schema!r} is not one this guarddiag reads ({', '.join(KNOWN_SCHEMAS)}); "
            "upgrade guarddiag or re-create the record"
        )
    try:
        functions = tuple(
            FunctionSummary(
                name=f["name"],
                file=f["file"],
                line=f["line"],
                frame_ids=tuple(f.get("frame_ids", ())),
                compiles=int(f["compiles"]),
                recompile_events=tuple(_event_from_dict(e) for e in f["recompile_events"]),
                limit_hits=tuple(LimitHit(**h) for h in f.get("limit_hits", ())),
                graph_breaks=tuple(GraphBreak(**g) for g in f.get("graph_breaks", ())),
            )
            for f in data["functions"]
        )
        p = data.get("parse", {})
        parse = ParseStats(
            p.get("lines", 0),
            p.get("torch_lines", 0),
            p.get("unrecognized", 0),
            tuple(p.get("unrecognized_samples", ())),
            tuple(p.get("unidentified_frames", ())),
        )
        return Run(
            functions=functions,
            parse=parse,
            torch_version=data.get("torch_version"),
            exit_code=data.get("exit_code"),
            source=data.get("source", "parse"),
            status=data.get("status", "ok"),
            script=data.get("script"),
            argv=tuple(data.get("argv", ())),
            flags=dict(data.get("flags", {})),
            config=dict(data.get("config", {})),
            flag_notes=tuple(data.get("flag_notes", ())),
            log_path=data.get("log_path"),
            duration_s=data.get("duration_s"),
            error=_error(data).get("exception"),
            error_flags=tuple(_error(data).get("flags", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{origin}: not a valid guarddiag run record ({exc!r}); re-create it with `guarddiag run --out`") from None


def _error(data: dict) -> dict:
    error = data.get("error") or {}
    if not isinstance(error, dict):
        raise TypeError(f"error: expected an object or null, got {type(error).__name__}")
    return error


def _event_from_dict(e: dict) -> RecompileEvent:
    causes = tuple(Cause(**c) for c in e["causes"])
    if not causes:
        # Every event the parser makes has a cause (unknown, at worst); an empty list is a hand edit.
        raise ValueError(f"recompile event {e['compile_id']} has no causes")
    return RecompileEvent(e["compile_id"], bool(e["logged"]), causes)


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see the old content or the new, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_run(run: Run, path: Path) -> None:
    """Write a run record as versioned JSON, atomically."""
    write_atomic(path, json.dumps(run_to_dict(run), indent=2) + "\n")


def load_run(path: Path) -> Run:
    """Read a run record written by :func:`save_run`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such run record; create one with `guarddiag run SCRIPT --out {path}`") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the run record ({exc.strerror}); give a record file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); re-create it with `guarddiag run --out`") from None
    return run_from_dict(data, str(path))
