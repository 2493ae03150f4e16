"""Join what several processes' logs say into one run: tag a process's functions, add parse counters.

(Pieces of one process's log are not merged here: ``guarddiag parse`` reads them through one parser.)
"""

from __future__ import annotations

from dataclasses import replace

from guarddiag.ids import with_process
from guarddiag.logparse.parser import MAX_SAMPLES
from guarddiag.model import FunctionSummary, ParseStats


def in_process(f: FunctionSummary, tag: str) -> FunctionSummary:
    """The same function as compiled in another process (``child1``): its frame and compile ids carry the tag."""
    return replace(
        f,
        frame_ids=tuple(with_process(tag, i) for i in f.frame_ids),
        recompile_events=tuple(replace(e, compile_id=with_process(tag, e.compile_id)) for e in f.recompile_events),
        limit_hits=tuple(replace(h, compile_id=with_process(tag, h.compile_id) if h.compile_id else None) for h in f.limit_hits),
        failed_compiles=tuple(replace(c, compile_id=with_process(tag, c.compile_id)) for c in f.failed_compiles),
    )


def add_stats(a: ParseStats, b: ParseStats) -> ParseStats:
    """Parse counters of two logs read as one."""
    return ParseStats(
        a.lines + b.lines,
        a.torch_lines + b.torch_lines,
        a.unrecognized + b.unrecognized,
        (*a.unrecognized_samples, *b.unrecognized_samples)[:MAX_SAMPLES],
        tuple(dict.fromkeys((*a.unidentified_frames, *b.unidentified_frames))),
    )
