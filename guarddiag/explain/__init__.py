"""The guard model of a compiled function: what its cache entries depend on, and what would recompile.

Pure: parsed functions and their guard listings in, an :class:`Explanation` of facts out, by job:
:mod:`~guarddiag.explain.facts` reads guards, :mod:`~guarddiag.explain.rows` and
:mod:`~guarddiag.explain.objects` group them into objects, :mod:`~guarddiag.explain.hints` says
what to fix. :mod:`guarddiag.render.explain_words` writes every sentence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from guarddiag.explain.arguments import named_arguments
from guarddiag.explain.facts import read_guard, user_name
from guarddiag.explain.fold import fold_entry, matters
from guarddiag.explain.hints import fix_hints, joined_settings, torch_era
from guarddiag.explain.model import (
    SCHEMA,
    CacheEntry,
    CauseCount,
    Explanation,
    FixHint,
    FunctionExplanation,
    GuardedObject,
)
from guarddiag.explain.objects import Memo, objects_of
from guarddiag.guardexpr import condition_key, size_condition, symbolic_condition
from guarddiag.guardkinds import FLAT_FALLBACK as SHAPE_GUARD_KIND
from guarddiag.ids import CompileId, FrameId
from guarddiag.logparse.events import Event, GuardListing, SizeGuardAdded, SymbolCreated
from guarddiag.logparse.guards import location_of
from guarddiag.model import CauseIdentity, FunctionSummary, Guard
from guarddiag.pipeline import LogReader
from guarddiag.sourceinfo import local_roles
from guarddiag.wrapped import frame_package, library_frame, torch_wrapper

__all__ = [
    "SCHEMA",
    "CacheEntry",
    "CauseCount",
    "Explanation",
    "FixHint",
    "FunctionExplanation",
    "GuardListings",
    "GuardedObject",
    "HintChecker",
    "listings_of",
    "explain_events",
    "explain_functions",
    "fix_hints",
    "objects_of",
    "read_guard",
    "torch_era",
    "user_name",
]


class GuardListings:
    """Each frame's guard listings by compile number, taken from the events (``LogReader(on_event=...)``). A size
    guard listed without the user's line (torch rewrote a relation: ``# (unknown var s23, ...)``) gets the line
    its compile's shape environment logged when it added the guard."""

    def __init__(self) -> None:
        self.by_frame: dict[FrameId, dict[int, tuple[Guard, ...]]] = {}
        self._symbols: dict[CompileId, dict[str, str]] = {}
        self._lines: dict[CompileId, dict[tuple[str, ...], str]] = {}

    def add(self, event: Event) -> None:
        if isinstance(event, SymbolCreated) and event.compile_id:
            self._symbols.setdefault(event.compile_id, {})[event.symbol] = event.source
        elif isinstance(event, SizeGuardAdded) and event.compile_id and event.location:
            condition = symbolic_condition(event.expr, self._symbols.get(event.compile_id, {}))
            self._lines.setdefault(event.compile_id, {}).setdefault(condition_key(condition), event.location)
        elif isinstance(event, GuardListing) and event.compile_id:
            cid = event.compile_id
            # A compile id listed twice (retries) keeps its last listing.
            self.by_frame.setdefault(cid.frame_id, {})[cid.number] = self._located(cid, event.guards)
            self._symbols.pop(cid, None)

    def _located(self, compile_id: CompileId, guards: tuple[Guard, ...]) -> tuple[Guard, ...]:
        lines = self._lines.pop(compile_id, None)
        if not lines:
            return guards
        return tuple(_with_line(g, lines) for g in guards)

    def guards(self) -> Iterable[Guard]:
        return (g for per in self.by_frame.values() for gs in per.values() for g in gs)


def _with_line(g: Guard, lines: Mapping[tuple[str, ...], str]) -> Guard:
    if g.kind != SHAPE_GUARD_KIND or g.location or (g.comment and location_of(g.comment)):
        return g
    found = lines.get(condition_key(size_condition(g.expr)))
    return dataclasses.replace(g, location=found) if found else g


def listings_of(lines: Iterable[str]) -> GuardListings:
    """Every frame's guard listings in a log, and nothing else: what a fix hint reads its facts from (an
    nn.Module's attribute or a dataclass's, what automatic dynamic took) where no explain is built (``run``)."""
    from guarddiag.logparse.parser import LogParser
    from guarddiag.pipeline import paused_gc

    listings = GuardListings()
    parser = LogParser(keep_guards=None, locations=False)
    with paused_gc():
        for event in parser.parse(lines):
            listings.add(event)
        for event in parser.finish():
            listings.add(event)
    return listings


def explain_events(events: Iterable[Event], torch_version: str | None = None, full: bool = False) -> Explanation:
    """The guard model of every compiled function in a parsed log."""
    listings = GuardListings()
    reader = LogReader(guards=None, on_event=listings.add)
    for event in events:
        reader.add(event)
    functions, _ = reader.result()
    return explain_functions(functions, listings, torch_version, full)


def explain_functions(
    functions: Iterable[FunctionSummary],
    listings: GuardListings,
    torch_version: str | None = None,
    full: bool = False,
    checks: HintChecker | None = None,
) -> Explanation:
    """The guard model of each compiled function, from its guard listings; ``checks`` says where each
    config hint stands for the script (guarddiag.verdicts.check_hints), when it is known."""
    era = torch_era(torch_version, listings.guards())
    functions = tuple(functions)
    files = tuple(f.file for f in functions)
    breaks = tuple(b for f in functions for b in f.graph_breaks)
    functions = tuple(f for f in functions if f.compiles)
    framed = [listings.by_frame.get(f.frame_ids[0], {}) for f in functions]
    # One setting's lines joined across the functions: a script holds one value of it.
    hints = joined_settings([fix_hints(f, torch_version, era, frames, breaks) for f, frames in zip(functions, framed, strict=True)])
    explained = tuple(
        _explain_function(f, frames, era, full, files, found, checks)
        for f, frames, found in zip(functions, framed, hints, strict=True)
    )
    return Explanation(explained, torch_version, era, full)


# Where each config hint of a function stands: (hints, function) -> the hints, annotated.
HintChecker = Callable[[tuple[FixHint, ...], FunctionSummary], tuple[FixHint, ...]]


def _explain_function(
    f: FunctionSummary,
    listings: Mapping[int, tuple[Guard, ...]],
    era: str,
    full: bool,
    files: tuple[str, ...],
    hints: tuple[FixHint, ...],
    checks: HintChecker | None = None,
) -> FunctionExplanation:
    roles = local_roles(f.file, f.name, f.line)
    memo = Memo()
    entries = []
    for number in sorted(listings):
        objects, ambient = objects_of(listings[number], roles, full, memo)
        entries.append(CacheEntry(f.frame_ids[0].compile(number), objects, ambient))
    named = named_arguments(f, entries, files)
    entries = [named.entry(e) for e in entries]
    causes: dict[CauseIdentity, CauseCount] = {}
    for e in f.recompile_events:
        c = named.cause(e.causes[0])
        causes[c.key] = CauseCount(causes[c.key].cause if c.key in causes else c, causes[c.key].count + 1 if c.key in causes else 1)
    hints = tuple(named.hint(h) for h in (checks(hints, f) if checks is not None else hints))
    keep = matters(f, entries)
    if not full:
        # torch's or a library's own frame (not torch's `inner`, which calls the user's code) that never
        # recompiled folds whole: compiled after a graph break in library code, nothing in it changed.
        package = "" if torch_wrapper(f.file) or f.compiles > 1 else frame_package(f.file)
        entries = [fold_entry(e, keep, library_frame(f.file), package) for e in entries]
    return FunctionExplanation(f, tuple(entries), tuple(sorted(causes.values(), key=lambda c: -c.count)), hints, keep)
