"""torch's own record of a process's compiles (written in the child by ``child/_site/_guarddiag_process.py``).

One JSON object a line: ``{"ledger": 1}`` first, then one record per compile attempt as torch's
compilation metrics hold it. It is what the log's counts are checked against, and it says why an
attempt installed no code, which the log does not. Between them, guarddiag's own records of calls a
compiler stance refused (``child/_site/_guarddiag_stance.py``): ``{"stance": ..., "counted": ...}`` for
a stance in use, ``{"refused": STANCE, ...}`` with the calls so far (the highest count is the total).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from guarddiag.ids import CompileId, FrameId
from guarddiag.model import FailedCompile, FunctionSummary, TorchMetrics
from guarddiag.wrapped import frame_package


@dataclass(frozen=True)
class CompileRecord:
    """One compile attempt as torch itself recorded it. ``name`` is None for an attempt refused at
    the recompile limit (torch records no code object for it). ``compile_id``: None where torch's
    text is no compile id."""

    compile_id: CompileId | None
    name: str | None
    file: str | None
    line: int | None
    fail_type: str | None = None
    reason: str = ""
    # Seconds Dynamo spent on the attempt (None: not timed, or a ledger written before times were kept).
    compile_s: float | None = None
    # torch's recompile limit in force when the attempt was recorded (None: not known).
    recompile_limit: int | None = None
    # The file of the code that called the function being compiled (None: not known, or an older ledger).
    caller: str | None = None
    # torch's own figures for the attempt (recompile reason, guard count and latency, cache sizes, user
    # contexts, graph breaks; compile id as torch wrote it): None where the torch or the ledger kept none.
    torch: TorchMetrics | None = None


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
                    CompileId.parse(str(raw["compile_id"])),
                    as_text(raw.get("name")),
                    as_text(raw.get("file")),
                    raw["line"] if isinstance(raw.get("line"), int) else None,
                    as_text(raw.get("fail_type")),
                    as_text(raw.get("reason")) or "",
                    as_seconds(raw.get("compile_s")),
                    as_whole(raw.get("recompile_limit")),
                    as_text(raw.get("caller")),
                    torch_figures(
                        CompileId.parse(str(raw["compile_id"])), raw.get("recompile_reason"), raw.get("guard_count"),
                        raw.get("guard_latency_us"), raw.get("cache_size"), raw.get("accumulated_cache_size"),
                        raw.get("user_contexts"), raw.get("graph_breaks"),
                    ),
                )
            )
    return tuple(records)


@dataclass(frozen=True)
class RefusalRecord:
    """Calls of one function a compiler stance refused, alike in torch's reasons (``None``: torch gave none)."""

    stance: str
    name: str
    file: str
    line: int | None
    entries: int
    reasons: tuple[str, ...] | None
    calls: int


@dataclass(frozen=True)
class StanceRecords:
    """What a process's ledger says of compiler stances: the stances in use (name, counted) and the calls refused."""

    uses: tuple[tuple[str, bool], ...] = ()
    refusals: tuple[RefusalRecord, ...] = ()


def read_stances(path: Path) -> StanceRecords:
    """The stance records in ``path`` (none when there is no such file); each refusal once, with its highest count."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return StanceRecords()
    uses: dict[tuple[str, bool], None] = {}
    refusals: dict[tuple, RefusalRecord] = {}
    for line in text.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue  # a line torn by a process killed mid-write
        if not isinstance(raw, dict):
            continue
        if isinstance(raw.get("stance"), str) and isinstance(raw.get("counted"), bool):
            uses[raw["stance"], raw["counted"]] = None
        refusal = _refusal(raw)
        if refusal is not None:
            key = (refusal.stance, refusal.name, refusal.file, refusal.line, refusal.reasons)
            if key not in refusals or refusals[key].calls < refusal.calls:
                refusals[key] = refusal
    return StanceRecords(tuple(uses), tuple(refusals.values()))


def _refusal(raw: dict) -> RefusalRecord | None:
    stance, name, calls = raw.get("refused"), raw.get("name"), as_whole(raw.get("calls"))
    if not isinstance(stance, str) or not isinstance(name, str) or calls is None or calls < 1:
        return None
    reasons = raw.get("reasons")
    return RefusalRecord(
        stance,
        name,
        as_text(raw.get("file")) or "",
        as_whole(raw.get("line")),
        as_whole(raw.get("entries")) or 0,
        tuple(str(r) for r in reasons) if isinstance(reasons, list) else None,
        calls,
    )


def compiles_in(records: tuple[CompileRecord, ...] | None) -> int | None:
    """Compile attempts torch made (refusals at the limit are none), or None when not recorded."""
    return None if records is None else sum(1 for r in records if r.name is not None)


def as_text(value: object) -> str | None:
    """``value`` when it is text, else None (a record's JSON value, as torch or a hand-edited file wrote it)."""
    return value if isinstance(value, str) else None


# What of torch's recompile_reason a record keeps: the child's ledger cuts it there (its own copy of the
# figure: it imports nothing of guarddiag), and a trace's is cut alike, so both give the same record.
RECOMPILE_REASON_CHARS = 4000


def torch_figures(
    compile_id: CompileId | None,
    reason: object,
    guard_count: object,
    guard_latency_us: object,
    cache_size: object,
    accumulated_cache_size: object,
    contexts: object,
    graph_breaks: object,
) -> TorchMetrics | None:
    """torch's figures of one attempt as raw JSON values (a run's ledger, a trace's compilation_metrics) checked
    and kept alike: the reason cut at :data:`RECOMPILE_REASON_CHARS`, the user contexts (a set, written as a
    list) sorted; None when torch gave none of them (an older torch or ledger)."""
    metrics = TorchMetrics(
        compile_id,
        reason[:RECOMPILE_REASON_CHARS] if isinstance(reason, str) and reason else None,
        as_whole(guard_count),
        as_seconds(guard_latency_us),
        as_whole(cache_size),
        as_whole(accumulated_cache_size),
        tuple(sorted(c for c in contexts if isinstance(c, str))) if isinstance(contexts, list) else None,
        as_whole(graph_breaks),
    )
    return None if metrics == TorchMetrics(compile_id) else metrics


def as_seconds(value: object) -> float | None:
    """``value`` as seconds (or microseconds) when it is a finite number >= 0, else None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
    return float(value) if ok else None


def as_whole(value: object) -> int | None:
    """``value`` when it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class LedgerIndex:
    """torch's records looked up by (function name, first line, compile number), in log order."""

    def __init__(self, records: Sequence[CompileRecord]) -> None:
        self._by_key: dict[tuple[str | None, int | None, int], list[CompileRecord]] = {}
        self._frame_names: dict[FrameId, tuple[str | None, int | None]] = {}
        for r in records:
            cid = r.compile_id
            if cid is None:
                continue
            if r.name is not None:
                self._frame_names[cid.frame_id] = (r.name, r.line)
                key = (r.name, r.line, cid.number)
            else:  # refused at the limit: torch records no name, its frame id names the function
                key = (*self._frame_names.get(cid.frame_id, (None, None)), cid.number)
            self._by_key.setdefault(key, []).append(r)

    def _take(self, name: str, line: int | None, number: int | None) -> CompileRecord | None:
        found = self._by_key.get((name, line, number)) if number is not None else None
        return found.pop(0) if found else None

    def failure(self, name: str, line: int | None, frame_id: FrameId, number: int) -> FailedCompile:
        """Why compile ``number`` of a frame installed no code, as torch recorded it (taken once)."""
        compile_id = frame_id.compile(number)
        record = self._take(name, line, number)
        if record is None:
            return FailedCompile(compile_id, "no_code")
        if record.fail_type:
            return FailedCompile(compile_id, "error", f"{record.fail_type}: {record.reason}".rstrip(": "))
        return FailedCompile(compile_id, "skipped")

    def limit_outcome(self, name: str, line: int | None, number: int | None) -> str:
        """What torch did with the call refused at ``number``: raised (FailOnRecompileLimitHit) or ran it eagerly."""
        record = self._take(name, line, number)
        return "raised" if record is not None and record.fail_type == "FailOnRecompileLimitHit" else "eager"


FunctionRecords = dict[tuple[str, str, int | None], list[CompileRecord]]


def records_by_function(records: Iterable[CompileRecord]) -> FunctionRecords:
    """torch's records of each compiled function, in torch's order, by (name, file, first line) as a
    :class:`FunctionSummary` is named; an attempt refused at the limit (no code object) is no function's."""
    by_function: FunctionRecords = {}
    for r in records:
        if r.name is not None:
            by_function.setdefault((r.name, r.file or "", r.line), []).append(r)
    return by_function


def with_callers(functions: Iterable[FunctionSummary], records: Sequence[CompileRecord]) -> list[FunctionSummary]:
    """Each function with whose code called it at its compiles (``FunctionSummary.callers``), from torch's
    records of them; unchanged where no record names a caller (a parsed log, an older ledger)."""
    callers = {
        key: tuple(dict.fromkeys(frame_package(r.caller) for r in mine if r.caller is not None))
        for key, mine in records_by_function(records).items()
    }
    # A function no record names is kept as it is, not copied: a log's thousands of functions are all such.
    return [replace(f, callers=c) if (c := callers.get((f.name, f.file, f.line))) else f for f in functions]
