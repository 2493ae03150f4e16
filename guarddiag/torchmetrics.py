"""torch's own figures per compile (guard count and latency, cache sizes, recompile reason, user contexts,
graph breaks), from torch's record of each compile (``guarddiag.ledger``) onto the functions of the model.

A function's records are found by its name, file and first line, in torch's order, as compile times are
(``guarddiag.timing``). Each record's compile id is placed in the function's own frame: its process, and
its cache generation (torch's frame ids restart after ``torch._dynamo.reset()``, the model's carry the
generation: the n-th time a frame's compile 0 comes back is generation n). A function whose records hold
none of the figures (a ledger written before they were kept) gets none: absent, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from guarddiag.ids import CompileId
from guarddiag.ledger import CompileRecord, records_by_function
from guarddiag.model import FunctionSummary, TorchMetrics


def with_torch_metrics(functions: Iterable[FunctionSummary], records: Sequence[CompileRecord]) -> list[FunctionSummary]:
    """Each function with torch's figures for each of its compile attempts (``FunctionSummary.torch_metrics``);
    unchanged where no record of it holds any (a parsed log, an older ledger, a torch that kept none)."""
    by_function = {}
    for key, mine in records_by_function(records).items():
        with_figures = [r for r in mine if r.torch is not None]
        if with_figures:
            by_function[key] = with_figures
    if not by_function:
        return list(functions)
    out = []
    for f in functions:
        mine = by_function.get((f.name, f.file, f.line))
        out.append(replace(f, torch_metrics=_metrics(f, mine)) if mine else f)
    return out


def _metrics(f: FunctionSummary, records: list[CompileRecord]) -> tuple[TorchMetrics, ...]:
    generations: dict[str, int] = {}
    out = []
    for r in records:
        assert r.torch is not None  # with_torch_metrics keeps only records with figures
        out.append(replace(r.torch, compile_id=_placed(f, r.compile_id, generations)))
    return tuple(out)


def _placed(f: FunctionSummary, cid: CompileId | None, generations: dict[str, int]) -> CompileId | None:
    """``cid`` as the model names it: the frame of the function that is its frame in the cache generation it
    belongs to (the n-th return of the frame's compile 0), in that frame's process."""
    if cid is None:
        return None
    if cid.number == 0 and cid.attempt == 0:
        generations[cid.frame] = generations.get(cid.frame, -1) + 1
    generation = max(generations.get(cid.frame, 0), 0)
    own = [i for i in f.frame_ids if i.frame.partition("~")[0] == cid.frame]
    if generation < len(own):
        return CompileId(own[generation].frame, cid.number, cid.attempt, own[generation].process)
    return cid.in_generation(generation)
