"""guarddiag's reading of each recompile checked against torch's own ``recompile_reason`` for it.

torch records, per recompile, the first failing guard of the newest cache entry (``reasons[0]`` in
torch/_dynamo/convert_frame.py: ``0/1: <guard>``, a ``User stack trace:`` under it from torch 2.11). guarddiag
reads every entry's failure from the log and may take another entry's as decisive, so the check compares like
with like: torch's reason against the failure guarddiag read for the same entry. They disagree when guarddiag
read another failure for that entry, or none at all. A disagreement is a fact of the report value
(``report.RunReport.disagreements``); render/ says it, nothing resolves it.
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.ids import CompileId, FunctionKey
from guarddiag.logparse.blocks import reason_failure
from guarddiag.model import FunctionSummary, RecompileEvent, Run, TorchMetrics

# What torch records when no entry's guards failed (a recompile it could not explain): nothing to compare.
_NO_REASON = "Unable to find recompilation reasons"


@dataclass(frozen=True)
class ReasonDisagreement:
    """A recompile whose cause torch recorded otherwise than guarddiag read it from the log: torch's failing
    guard (``torch_reason``, its first line, without the entry's id) against cache entry ``entry`` (None:
    torch's reason names none), and the failure guarddiag read for that entry (``read``; None: it read none)."""

    function: FunctionKey
    compile_id: CompileId
    entry: str | None
    torch_reason: str
    read: str | None


def reason_disagreements(run: Run) -> tuple[ReasonDisagreement, ...]:
    """Every recompile of ``run`` whose ``recompile_reason`` in torch's record is not the failure guarddiag
    read for the same cache entry; none where torch kept no reasons (a parsed log, torch < 2.7)."""
    found = []
    for f in run.functions:
        events = {_compile_key(e.compile_id): e for e in f.recompile_events}
        for m in f.torch_metrics:
            disagreement = _check(f, m, events)
            if disagreement is not None:
                found.append(disagreement)
    return tuple(found)


def _check(f: FunctionSummary, m: TorchMetrics, events: dict[tuple[str, int], RecompileEvent]) -> ReasonDisagreement | None:
    if m.compile_id is None or not m.recompile_reason or m.recompile_reason.startswith(_NO_REASON):
        return None
    failure = reason_failure(m.recompile_reason)
    entry, guard = (str(failure.cache_entry) if failure.cache_entry else None), failure.text
    event = events.get(_compile_key(m.compile_id))
    causes = () if event is None else event.causes
    # The failures guarddiag read for torch's entry (for a reason that names no entry, for any).
    read = [c.text for c in causes if c.text and (entry is None or _entry_key(c.cache_entry) == entry)]
    if any(_same(text, guard) for text in read):
        return None
    return ReasonDisagreement(f.key, m.compile_id, entry, guard, read[0] if read else None)


def disagreement_dict(d: ReasonDisagreement) -> dict[str, object]:
    """A disagreement's JSON form (the JSON report's ``disagreements``): its function as a verdict file keys one."""
    from guarddiag.verdicts import function_key_dict  # the one writer of a function key as JSON

    return {
        "function": function_key_dict(d.function),
        "compile_id": str(d.compile_id),
        "entry": d.entry,
        "torch_reason": d.torch_reason,
        "read": d.read,
    }


def _same(read: str, torch_text: str) -> bool:
    """The same guard text, whatever the spacing (the log's reader folds runs of spaces)."""
    return read.split() == torch_text.split()


def _compile_key(cid: CompileId) -> tuple[str, int]:
    return cid.frame, cid.number


def _entry_key(entry: CompileId | None) -> str | None:
    """A cause's cache entry as torch's reason names it: ``0/1``, without process or cache generation."""
    return None if entry is None else f"{entry.frame.partition('~')[0]}/{entry.number}"
