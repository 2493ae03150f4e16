"""torch's own record of a process's compiles (written in the child by ``child/_site/_guarddiag_process.py``).

One JSON object a line: ``{"ledger": 1}`` first, then one record per compile attempt as torch's
compilation metrics hold it. It is what the log's counts are checked against, and it says why an
attempt installed no code, which the log does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CompileRecord:
    """One compile attempt as torch itself recorded it. ``name`` is None for an attempt refused at
    the recompile limit (torch records no code object for it)."""

    compile_id: str
    name: str | None
    file: str | None
    line: int | None
    fail_type: str | None = None
    reason: str = ""
    # Seconds Dynamo spent on the attempt (None: not timed, or a ledger written before times were kept).
    compile_s: float | None = None
    # torch's recompile limit in force when the attempt was recorded (None: not known).
    recompile_limit: int | None = None


def read_ledger(path: Path) -> tuple[CompileRecord, ...] | None:
    """The records in ``path``; None when there is no such file (torch's records were never hooked)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    records = []
    for line in text.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue  # a line torn by a process killed mid-write
        if isinstance(raw, dict) and "compile_id" in raw:
            records.append(
                CompileRecord(
                    str(raw["compile_id"]),
                    _text(raw.get("name")),
                    _text(raw.get("file")),
                    raw["line"] if isinstance(raw.get("line"), int) else None,
                    _text(raw.get("fail_type")),
                    _text(raw.get("reason")) or "",
                    _seconds(raw.get("compile_s")),
                    _whole(raw.get("recompile_limit")),
                )
            )
    return tuple(records)


def compiles_in(records: tuple[CompileRecord, ...] | None) -> int | None:
    """Compile attempts torch made (refusals at the limit are none), or None when not recorded."""
    return None if records is None else sum(1 for r in records if r.name is not None)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _seconds(value: object) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
    return float(value) if ok else None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
