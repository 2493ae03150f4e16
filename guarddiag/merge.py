"""Merge run records of one process's log that arrived in pieces (a CI log split in two files).

Compile ids are absolute within a process, so the pieces agree on numbering: a function's
compiles are the highest compile number seen plus one, and events are united by compile id.
"""

from __future__ import annotations

from dataclasses import replace

from guarddiag.model import FunctionSummary, ParseStats, RecompileEvent, Run


def _merge_function(a: FunctionSummary, b: FunctionSummary) -> FunctionSummary:
    events: dict[str, RecompileEvent] = {e.compile_id: e for e in a.recompile_events}
    for e in b.recompile_events:
        known = events.get(e.compile_id)
        # An announced cause beats an inference made without the previous listing.
        if known is None or (e.logged and not known.logged):
            events[e.compile_id] = e
    limit = {(h.compile_id, h.limit): h for h in (*a.limit_hits, *b.limit_hits)}
    breaks = {(g.compile_id, g.location): g for g in (*a.graph_breaks, *b.graph_breaks)}
    # A compile id whose only trace is a limit warning is no compile; a piece cut before the
    # warning cannot know that, so the union decides.
    refused = {_order(h.compile_id)[1] for h in limit.values() if h.compile_id}
    numbers = {_order(e.compile_id)[1] for e in events.values()}
    numbers |= {f.compiles - 1 for f in (a, b) if f.compiles}
    kept = {n for n in numbers if n not in refused}
    return FunctionSummary(
        name=a.name or b.name,
        file=a.file or b.file,
        line=a.line if a.line is not None else b.line,
        frame_ids=tuple(dict.fromkeys((*a.frame_ids, *b.frame_ids))),
        compiles=max(kept) + 1 if kept else 0,
        recompile_events=tuple(
            sorted((e for e in events.values() if _order(e.compile_id)[1] not in refused), key=lambda e: _order(e.compile_id))
        ),
        limit_hits=tuple(limit.values()),
        graph_breaks=tuple(breaks.values()),
    )


def _order(compile_id: str) -> tuple[str, int]:
    head, _, number = compile_id.rpartition("/")
    return head, int(number) if number.isdigit() else 0


def in_process(f: FunctionSummary, tag: str) -> FunctionSummary:
    """The same function as compiled in another process (``child1``): its frame and compile ids carry the tag."""
    return replace(
        f,
        frame_ids=tuple(f"{tag}:{i}" for i in f.frame_ids),
        recompile_events=tuple(replace(e, compile_id=f"{tag}:{e.compile_id}") for e in f.recompile_events),
    )


def add_stats(a: ParseStats, b: ParseStats) -> ParseStats:
    """Parse counters of two logs read as one."""
    return ParseStats(
        a.lines + b.lines,
        a.torch_lines + b.torch_lines,
        a.unrecognized + b.unrecognized,
        (*a.unrecognized_samples, *b.unrecognized_samples)[:5],
        tuple(dict.fromkeys((*a.unidentified_frames, *b.unidentified_frames))),
    )


def merge_runs(a: Run, b: Run) -> Run:
    """One run from two pieces of the same log, in log order."""
    both = (*a.functions, *b.functions)
    # A piece that starts mid-function has its frame ids but not its name: the other piece names it.
    by_frame = {i: f.key for f in both if f.name for i in f.frame_ids}
    functions: dict[str, FunctionSummary] = {}
    for f in both:
        key = f.key if f.name else next((by_frame[i] for i in f.frame_ids if i in by_frame), f"#{f.frame_ids}")
        functions[key] = _merge_function(functions[key], f) if key in functions else f
    stats = add_stats(a.parse, b.parse)
    parse = replace(stats, unidentified_frames=tuple(i for i in stats.unidentified_frames if i not in by_frame))
    return Run(
        functions=tuple(functions.values()),
        parse=parse,
        torch_version=a.torch_version or b.torch_version,
        exit_code=b.exit_code if b.exit_code is not None else a.exit_code,
        source=a.source,
        status=a.status if a.status != "ok" else b.status,
        script=a.script or b.script,
        log_path=a.log_path,
    )
