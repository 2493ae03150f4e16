"""Compile time per function, from torch's own record of each compile (``guarddiag.ledger``).

torch times every compile attempt (``entire_frame_compile_time_s``: the whole frame, backend
included); the log does not. A function's records are found by its name, file and first line, as
the model matches functions (the log's frame ids restart after ``torch._dynamo.reset()``; the
record's do too, so they cannot tell the generations apart). A time is only given when every
compile of the function has one: a parsed log, a torch that kept no records (2.1) or a record
without times leaves it None, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from guarddiag.ledger import CompileRecord, records_by_function
from guarddiag.model import FunctionSummary


def with_compile_times(functions: Iterable[FunctionSummary], records: Sequence[CompileRecord]) -> list[FunctionSummary]:
    """Each function with the seconds torch spent compiling it, the share of them in its recompiles
    (every compile after each code object's first) and the recompile limit in force at its last compile; unchanged
    without records (a parsed log, a torch that kept none)."""
    if not records:
        return list(functions)
    by_function = records_by_function(records)
    out = []
    for f in functions:
        mine = by_function.get((f.name, f.file, f.line), []) if f.name else []
        out.append(replace(f, **_times(f, mine)))
    return out


def _times(f: FunctionSummary, mine: list[CompileRecord]) -> dict[str, object]:
    limit = mine[-1].recompile_limit if mine else None
    seconds = [r.compile_s for r in mine]
    if not mine and f.compiles == 0:
        return {"compile_s": 0.0, "recompile_s": 0.0}
    if len(mine) < f.compiles or not mine or any(s is None for s in seconds):
        return {"recompile_limit": limit}  # some compile torch did not time, or guarddiag did not see
    # Each code object's first compile is none of its recompiles: the first compiles numbered 0, one per
    # code object of this name and line (its first compile after a reset is a recompile).
    firsts = [i for i, r in enumerate(mine) if r.compile_id is not None and r.compile_id.number == 0]
    firsts = firsts[: f.code_objects] or [0]
    return {
        "compile_s": round(sum(seconds), 6),  # type: ignore[arg-type]
        "recompile_s": round(sum(s for i, s in enumerate(seconds) if i not in firsts), 6),  # type: ignore[misc]
        "recompile_limit": limit,
    }
