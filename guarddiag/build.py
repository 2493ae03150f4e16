"""Events -> run model: count compiles per frame, attach causes, infer the unannounced ones.

Compiles are counted from compile ids (``[frame/n]``), not from ``Recompiling function``
lines: torch does not announce every recompile (torch 2.4 with
``inline_inbuilt_nn_modules=False`` compiles a ``forward`` once per module instance and
says nothing). For an unannounced recompile the cause is inferred by comparing the
frame's guard listing with the one of its previous compile.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from guarddiag.causes import cause_from_changed_guard, classify_failure, classify_last_reason
from guarddiag.guardcost import origins
from guarddiag.guardexpr import condition_key, symbolic_condition
from guarddiag.ids import MAIN_PROCESS, CompileId, FrameId, Process
from guarddiag.ledger import CompileRecord, LedgerIndex, RefusalRecord, with_callers
from guarddiag.logparse.events import (
    CompileSeen,
    Event,
    FrameNamed,
    GraphBreakSeen,
    GuardFailure,
    GuardListing,
    LimitWarning,
    RecompileAnnounced,
    SizeGuardAdded,
    StanceRefusalSeen,
    SymbolCreated,
)
from guarddiag.model import (
    Cause,
    CompiledFor,
    DynamicDims,
    EntryGuards,
    FunctionSummary,
    GraphBreak,
    Guard,
    LimitHit,
    RecompileEvent,
    Refusal,
    Resume,
    StackSlot,
)
from guarddiag.pins import (
    Changes,
    Entry,
    Variety,
    changed,
    decisive,
    diff_listings,
    dynamic_dims,
    dynamic_scalars,
    entry_numbers,
    hashed,
    hashed_pins,
    pinned,
    refused_cause,
    size_guards,
)
from guarddiag.resume import resume_of, slot_index, slot_name
from guarddiag.sourceinfo import Roles, local_roles
from guarddiag.timing import with_compile_times
from guarddiag.torchmetrics import with_torch_metrics
from guarddiag.wrapped import library_frame, with_named_arguments, wrapped_callable

# (file, function name, first line) -> role of each local name ("argument", "closure variable", ...).
RolesLookup = Callable[[str, str, "int | None"], Mapping[str, str]]


@dataclass
class _Frame:
    frame_id: FrameId
    # Its place among the builder's frames: a name matching several frames takes the first.
    seq: int = 0
    name: str = ""
    file: str = ""
    line: int | None = None
    compiles: set[int] = field(default_factory=set)
    limit_numbers: set[int] = field(default_factory=set)
    # Compile numbers that started tracing, and those that installed guards.
    started: set[int] = field(default_factory=set)
    listed: set[int] = field(default_factory=set)
    # Classified only at the end, when the frame's name (and so its source) is known.
    announced: dict[int, tuple[GuardFailure, ...]] = field(default_factory=dict)
    inferred: dict[int, tuple[tuple[Guard, Guard], ...]] = field(default_factory=dict)
    limit_hits: list[LimitHit] = field(default_factory=list)
    # index in limit_hits -> the compile number torch refused there (when the log names it)
    limit_at: dict[int, int] = field(default_factory=dict)
    # index in limit_hits -> the reasons torch announced for the refused call, where no compile number names them (old torch)
    limit_failures: dict[int, tuple[GuardFailure, ...]] = field(default_factory=dict)
    # Graph breaks by (compile number, location): torch's records of them on the graph_breaks channel,
    # and those only a warning names (a log without the channel, torch 2.0, shows no other).
    graph_breaks: dict[tuple[int | None, str], GraphBreak] = field(default_factory=dict)
    warned_breaks: dict[tuple[int | None, str], GraphBreak] = field(default_factory=dict)
    last_listing: tuple[int, GuardListing] | None = None
    # Each listed compile's guards: how many, torch's measurement of a check, where they come from.
    entry_guards: dict[int, EntryGuards] = field(default_factory=dict)
    # Each compile's pinned values, hashed (compile number -> hash of what -> hash of value), kept once
    # the frame recompiles; and per announced recompile, what changed against each entry torch printed.
    pins: dict[int, Entry] = field(default_factory=dict)
    # What any of those entries pins (their keys, together): kept as they come, so that a compile asks it
    # in constant time (a union over every earlier entry made a frame's 20,000 compiles quadratic).
    pinned_before: set[int] = field(default_factory=set)
    changed: dict[int, dict[int, Changes]] = field(default_factory=dict)
    # per announced recompile, the entry each of torch's reasons is against (pins.entry_numbers)
    against: dict[int, tuple[int | None, ...]] = field(default_factory=dict)
    # A wrapper frame (torch's ``inner``): what each compile was for (guarddiag/wrapped.py).
    compiled_for: dict[int, CompiledFor] = field(default_factory=dict)
    wrapper: bool | None = None
    # Tensors some compile of a recompiling frame treats as dynamic (insertion-ordered set).
    dynamic: dict[DynamicDims, None] = field(default_factory=dict)
    # Per compile number: its shape environment's symbols (``s27`` -> ``L['x'].size()[1]``), and the user's line
    # (location, code) behind each size guard it added, by the guard's condition (guardexpr.condition_key).
    symbols: dict[int, dict[str, str]] = field(default_factory=dict)
    # Per compile number: the sizes of the call it was compiled for, by source (``L['x'].size()[1]`` -> 80).
    sizes: dict[int, dict[str, int]] = field(default_factory=dict)
    size_guard_lines: dict[int, dict[tuple[str, ...], tuple[str, str]]] = field(default_factory=dict)
    # The reasons of each call fail_on_recompile refused, as the script printed the error into the log.
    printed_refusals: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def refused(self) -> set[int]:
        """Compile numbers refused at the recompile limit. A number whose guards were listed compiled: a
        limit warning that names it (a line mangled in a paste) cannot take it back."""
        return self.limit_numbers - self.listed

    def name_it(self, name: str, file: str, line: int | None) -> None:
        if name and not self.name:
            self.name, self.file, self.line = name, file, line


def _place(cid: CompileId | None, process: Process) -> CompileId | FrameId | None:
    """Where an event without a frame of its own was: its compile id (``rank1:0/1``), the bare process
    (``rank1:``) of a line of rank 1 that printed none, None for the main process's."""
    if cid is not None:
        return cid
    return FrameId("", process) if process else None


class RunBuilder:
    """Accumulates events into per-frame state; :meth:`functions` gives the summaries."""

    def __init__(
        self, roles: RolesLookup = local_roles, ledger: Sequence[CompileRecord] = (), refusals: Sequence[RefusalRecord] = ()
    ) -> None:
        """``ledger``: torch's own record of the compiles in this process, when guarddiag ran it: it
        says why an attempt installed no code, which the log does not. ``refusals``: the calls a compiler
        stance refused in it (the child counts them; torch logs nothing), each given the cause that
        matters among torch's reasons by the rule a recompile's follows."""
        self._roles = roles
        self._ledger = tuple(ledger)
        self._refusals: dict[tuple[str, str, int | None], list[RefusalRecord]] = {}
        for r in refusals:
            self._refusals.setdefault((r.name, r.file, r.line), []).append(r)
        self._frames: dict[FrameId, _Frame] = {}
        # Named frames by name, and by (process, name): a message without a compile id finds its frame
        # without scanning every frame (a paste of 8,000 ranks' messages was quadratic in them).
        self._named: dict[str, list[_Frame]] = {}
        self._named_in: dict[tuple[Process, str], list[_Frame]] = {}
        # Whether the log has guard listings at all: only then does a compile without one mean no code.
        self._listings = False
        # Whether the log has torch's graph_breaks channel: then a warning naming a graph break is no
        # graph break of its own (`Tensor.item()` warns, then torch records the same break).
        self._break_channel = False
        # Messages without a compile id (old torch) are matched to frames by rank and function name.
        # A deque each: the oldest is taken first, in constant time however many wait.
        self._pending: dict[tuple[Process, str, str, int | None], deque[RecompileAnnounced]] = {}

    def add(self, event: Event) -> None:
        """Fold one event into the model."""
        if isinstance(event, CompileSeen):
            cid = event.compile_id
            if cid is not None:
                self._frame(cid.frame_id).compiles.add(cid.number)
        elif isinstance(event, FrameNamed):
            self._on_named(event)
        elif isinstance(event, RecompileAnnounced):
            self._on_recompile(event)
        elif isinstance(event, GuardListing):
            self._on_listing(event)
        elif isinstance(event, LimitWarning):
            self._on_limit(event)
        elif isinstance(event, SymbolCreated):
            cid = event.compile_id
            if cid is not None:
                frame = self._frame(cid.frame_id)
                frame.symbols.setdefault(cid.number, {})[event.symbol] = event.source
                if event.value.isdigit():
                    frame.sizes.setdefault(cid.number, {})[event.source] = int(event.value)
        elif isinstance(event, SizeGuardAdded):
            self._on_size_guard(event)
        elif isinstance(event, GraphBreakSeen):
            self._on_graph_break(event)
        elif isinstance(event, StanceRefusalSeen):
            self._on_printed_refusal(event)

    def _on_graph_break(self, event: GraphBreakSeen) -> None:
        """One graph break per compile and place, as torch counts them: a restart attempt (``0/0_1``)
        traces the same break again, and is the same compile."""
        cid = event.compile_id
        frame = self._frame(cid.frame_id if cid else FrameId("?"))
        self._break_channel = self._break_channel or event.channel
        breaks = frame.graph_breaks if event.channel else frame.warned_breaks
        key = (cid.number if cid else None, event.location)
        if key not in breaks or not breaks[key].reason:
            breaks[key] = GraphBreak(_place(cid, event.process), event.location, event.reason)

    def _on_printed_refusal(self, event: StanceRefusalSeen) -> None:
        """A call fail_on_recompile refused, printed by the script: the frame of that name and file
        (torch names the line the call was at, not the function's first line)."""
        named = [f for f in self._named.get(event.name, ()) if not f.file or f.file == event.file]
        frame = min(named, key=lambda f: f.seq) if named else self._frame_named(event.name, event.file, None)
        frame.printed_refusals.append(event.reasons)

    def _frame(self, frame_id: FrameId) -> _Frame:
        frame = self._frames.get(frame_id)
        if frame is None:
            frame = self._frames[frame_id] = _Frame(frame_id, len(self._frames))
        return frame

    def _name(self, frame: _Frame, name: str, file: str, line: int | None) -> None:
        """Name a frame (a frame is named once), and index it by its name."""
        if name and not frame.name:
            frame.name_it(name, file, line)
            self._named.setdefault(name, []).append(frame)
            self._named_in.setdefault((frame.frame_id.process, name), []).append(frame)

    def _on_named(self, event: FrameNamed) -> None:
        cid = event.compile_id
        if cid is None:
            # torch 2.0 prints no compile ids: every "start tracing" is the function's next compile.
            frame = self._frame_named(event.name, event.file, event.line, event.process)
            number = len(frame.compiles)
        else:
            if cid.attempt:
                return
            frame, number = self._frame(cid.frame_id), cid.number
        self._name(frame, event.name, event.file, event.line)
        frame.compiles.add(number)
        frame.started.add(number)
        pending = self._pending_for(event.name, event.file, event.line, event.process)
        if pending and number > 0:
            frame.announced.setdefault(number, pending.popleft().failures)

    def _on_recompile(self, event: RecompileAnnounced) -> None:
        cid = event.compile_id
        if cid is None:
            self._pending.setdefault((event.process, event.name, event.file, event.line), deque()).append(event)
            return
        frame = self._frame(cid.frame_id)
        self._name(frame, event.name, event.file, event.line)
        frame.announced[cid.number] = event.failures

    def _on_listing(self, event: GuardListing) -> None:
        cid = event.compile_id
        if cid is None:
            return
        frame = self._frame(cid.frame_id)
        frame.compiles.add(cid.number)
        frame.listed.add(cid.number)
        self._listings = True
        if cid.number > 0 and cid.number not in frame.announced and self._pending:
            self._bind_oldest_pending(frame, cid.number)
        last = frame.last_listing
        if cid.number > 0:
            pins = hashed_pins(event)
            if last is not None and last[0] not in frame.pins:
                first = hashed_pins(last[1])  # the frame recompiles: its first entry is wanted too
                frame.pins[last[0]] = hashed(first, size_guards(last[1]))
                frame.pinned_before.update(frame.pins[last[0]].values)
                frame.dynamic.update(dict.fromkeys(dynamic_dims(first)))
            frame.dynamic.update(dict.fromkeys(dynamic_dims(pins)))
            frame.dynamic.update(dict.fromkeys(dynamic_scalars(pins, frame.pinned_before)))
            if cid.number not in frame.announced and last is not None and last[0] == cid.number - 1:
                frame.inferred[cid.number] = diff_listings(pinned(last[1]), pinned(event))
            failures = frame.announced.get(cid.number, ())
            against = entry_numbers([f.cache_entry for f in failures], (n for n in frame.pins if n < cid.number))
            frame.against[cid.number] = against
            frame.changed[cid.number] = {n: changed(frame.pins[n], pins) for n in against if n is not None and n in frame.pins}
            frame.pins[cid.number] = hashed(pins, size_guards(event))
            frame.pinned_before.update(frame.pins[cid.number].values)
        frame.last_listing = (cid.number, event)
        # A listing of no guard at all (a filter that dropped every one: a RootGuardManager alone) has 0 leaves.
        leaves = sum(n for _, n in event.owners) if event.owners else 0 if not (event.guards or event.raw) else None
        frame.entry_guards[cid.number] = EntryGuards(cid, leaves, event.latency_us, origins(event.owners))
        if frame.wrapper is None:
            frame.wrapper = library_frame(frame.file)
        if frame.wrapper:
            # Read once per frame when its first listing shows no wrapped callable.
            wrapped = wrapped_callable(event.all_guards(), frame.name)
            frame.wrapper = wrapped is not None
            if wrapped is not None:
                frame.compiled_for[cid.number] = wrapped

    def _on_size_guard(self, event: SizeGuardAdded) -> None:
        """The user's line behind a size guard, kept by its condition: torch's listing names none for a relation
        it rewrote (``# (unknown var s23, please file a bug)``)."""
        cid = event.compile_id
        if cid is None or not event.location:
            return
        frame = self._frame(cid.frame_id)
        condition = symbolic_condition(event.expr, frame.symbols.get(cid.number, {}))
        frame.size_guard_lines.setdefault(cid.number, {}).setdefault(condition_key(condition), (event.location, event.code))

    def _on_limit(self, event: LimitWarning) -> None:
        cid = event.compile_id
        frame = self._frame(cid.frame_id) if cid else self._frame_named(event.name, event.file, event.line, event.process)
        last = frame.limit_hits[-1] if frame.limit_hits else None
        if not event.limit and last is not None and last.limit and not last.last_reason:
            # The tail of the warning just read, under another compile id (its first line's prefix was
            # mangled): one hit, at the tail's id.
            i = len(frame.limit_hits) - 1
            frame.limit_hits.pop()
            old = frame.limit_at.pop(i, None)
            if old is not None and old not in frame.limit_at.values():
                frame.limit_numbers.discard(old)
            event = replace(event, limit=last.limit, value=last.value, name=event.name or frame.name)
        if frame.name and not frame.file:
            frame.file, frame.line = event.file, event.line  # torch 2.0 names the file only here
        self._name(frame, event.name, event.file, event.line)
        reason = event.last_reason.split("  #")[0].strip()
        if cid is not None:
            frame.limit_numbers.add(cid.number)
            frame.limit_at[len(frame.limit_hits)] = cid.number
        else:
            # Old torch: the announcement just before the warning was refused, not compiled.
            pending = self._pending_for(event.name, event.file, event.line, event.process)
            if pending:
                refused = pending.pop()
                reason = reason or (refused.failures[0].text if refused.failures else "")
                frame.limit_failures[len(frame.limit_hits)] = refused.failures
        frame.limit_hits.append(LimitHit(_place(cid, event.process), event.limit, event.value, reason))

    def _pending_for(self, name: str, file: str, line: int | None, process: Process) -> deque[RecompileAnnounced]:
        for (pprocess, pname, pfile, pline), events in self._pending.items():
            if pprocess == process and pname == name and ((pfile, pline) == (file, line) or not file):
                return events
        return deque()

    def _frame_named(self, name: str, file: str, line: int | None, process: Process = MAIN_PROCESS) -> _Frame:
        """The frame with this name (old logs without compile ids); file may be unknown on either side.
        A name of the main process (no rank) matches a frame of any process."""
        named = self._named_in.get((process, name), ()) if process else self._named.get(name, ())
        fits = [frame for frame in named if not file or not frame.file or (frame.file, frame.line) == (file, line)]
        if fits:
            return min(fits, key=lambda frame: frame.seq)
        frame = self._frame(FrameId(f"?{name}@{file}:{line}" if file else f"?{name}", process))
        self._name(frame, name, file, line)
        return frame

    def _bind_oldest_pending(self, frame: _Frame, number: int) -> None:
        """torch 2.1-2.3 without the `dynamo` channel: a recompile message names a function but no compile id,
        and the next compile's guard listing has the id but no name. Log order pairs them."""
        process = frame.frame_id.process
        for (pprocess, *key), events in self._pending.items():
            if events and pprocess == process and (not frame.name or (frame.name, frame.file, frame.line) == tuple(key)):
                self._name(frame, *key)
                frame.announced[number] = events.popleft().failures
                return

    def _unnamed_frames(self) -> dict[tuple[Process, int], list[_Frame]]:
        """The unnamed frames by process and number of recompiles: torch 2.1-2.3's announcements match
        one of them by its count, looked up once each (a scan per announced function was quadratic)."""
        found: dict[tuple[Process, int], list[_Frame]] = {}
        for f in self._frames.values():
            if not f.name:
                found.setdefault((f.frame_id.process, sum(1 for n in f.compiles if n > 0)), []).append(f)
        return found

    def add_ledger(self, records: Sequence[CompileRecord]) -> None:
        """torch's records of the compiles, read with the events (a TORCH_TRACE holds them beside its compiles)."""
        self._ledger += tuple(records)

    def functions(self) -> tuple[tuple[FunctionSummary, ...], tuple[FrameId, ...]]:
        """The per-function summaries, and the frame ids no log line named."""
        unnamed_frames = self._unnamed_frames()
        for (process, *key), events in self._pending.items():
            if not events:
                continue
            fits = unnamed_frames.get((process, len(events)), [])
            if len(fits) == 1:
                # The only unnamed frame of this process whose recompiles match this many announcements.
                (unnamed,) = fits
                fits.clear()  # named now
                # torch 2.1-2.3 without the `dynamo` channel: guard listings carry compile ids but no
                # name, recompile messages a name but no compile id. One frame fits: they are one function.
                self._name(unnamed, *key)
                for number, ev in zip(sorted(n for n in unnamed.compiles if n > 0), events, strict=False):
                    unnamed.announced.setdefault(number, ev.failures)
                continue
            # Announced but never seen compiling (the log had no `dynamo` lines): count the announcements.
            frame = self._frame_named(*key, process)
            frame.compiles.add(0)
            number = max(frame.compiles)
            for ev in events:
                number += 1
                frame.compiles.add(number)
                frame.announced[number] = ev.failures
        self._pending.clear()
        for f in self._frames.values():
            if not self._break_channel:
                f.graph_breaks = f.warned_breaks
            f.warned_breaks = {}
        kept = [f for f in self._frames.values() if f.compiles or f.limit_hits or f.graph_breaks or f.printed_refusals]
        ledger = LedgerIndex(self._ledger)
        compiled = {(f.file, f.name) for f in kept}
        refusals = dict(self._refusals)
        summaries = _join_same_function(
            # A run's ledger knows each attempt's outcome even when no compile left a listing.
            [
                _summary(
                    f, self._roles(f.file, f.name, f.line), self._listings or bool(self._ledger), ledger, compiled,
                    refusals.pop((f.name, f.file, f.line), ()),
                )
                for f in kept
            ]
        )
        summaries = list(with_refusals(summaries, [r for rs in refusals.values() for r in rs], self._roles))
        summaries = with_callers(with_compile_times(summaries, self._ledger), self._ledger)
        summaries = with_named_arguments(with_torch_metrics(summaries, self._ledger))
        unnamed = tuple(f.frame_id for f in self._frames.values() if not f.name and f.compiles)
        return tuple(summaries), unnamed


def _join_same_function(summaries: list[FunctionSummary]) -> list[FunctionSummary]:
    """One summary per function (name, file, first line). Frames of one cache generation are different
    code objects (exec'd code, a notebook cell run again): each compiled on its own, none a recompile of
    another. After torch._dynamo.reset() the same code compiles again under a frame id of the next
    generation: the n-th code object of a generation is the n-th of the one before, and its first
    compile there is a recompile (one torch never announces)."""
    objects: dict[object, list[list[FunctionSummary]]] = {}
    taken: dict[tuple[object, int], int] = {}
    for f in summaries:
        key: object = f.key if f.name else f.frame_ids
        generation = f.frame_ids[0].generation
        n = taken[key, generation] = taken.get((key, generation), -1) + 1
        mine = objects.setdefault(key, [])
        if n < len(mine):
            mine[n].append(f)
        else:
            mine.append([f])
    return [_joined([_again(generations) for generations in code]) for code in objects.values()]


def _again(generations: list[FunctionSummary]) -> FunctionSummary:
    """One code object's summaries of each cache generation as one: its first compile in each later
    generation is a recompile after the reset."""
    first = generations[0]
    if len(generations) == 1:
        return first
    events: list[RecompileEvent] = list(first.recompile_events)
    for f in generations[1:]:
        if f.compiles:
            events.append(RecompileEvent(f.frame_ids[0].compile(0), False, (_AGAIN,)))
        events += f.recompile_events
    return replace(_joined(generations), recompile_events=tuple(events), code_objects=1)


def _joined(parts: list[FunctionSummary]) -> FunctionSummary:
    """Summaries of one name, file and first line added up (each part's code objects counted)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    return FunctionSummary(
        name=first.name,
        file=first.file,
        line=first.line,
        frame_ids=tuple(i for f in parts for i in f.frame_ids),
        compiles=sum(f.compiles for f in parts),
        recompile_events=tuple(e for f in parts for e in f.recompile_events),
        limit_hits=tuple(h for f in parts for h in f.limit_hits),
        graph_breaks=tuple(g for f in parts for g in f.graph_breaks),
        failed_compiles=tuple(c for f in parts for c in f.failed_compiles),
        compiled_for=tuple(dict.fromkeys(c for f in parts for c in f.compiled_for)),
        dynamic_dims=parts[-1].dynamic_dims,
        guard_entries=tuple(e for f in parts for e in f.guard_entries),
        refusals=tuple(r for f in parts for r in f.refusals),
        # A frame the log shows no compile of (a graph break, a limit hit alone) is no code object compiled.
        code_objects=sum(f.code_objects for f in parts if f.compiles) or 1,
        resume=replace(first.resume, slots=tuple(dict.fromkeys(s for f in parts if f.resume for s in f.resume.slots)))
        if first.resume is not None
        else None,
    )


# A recompile whose reason the log does not show, nor a guard listing of the previous compile to compare.
_UNKNOWN = Cause(category="other", source="", guard="", text="", known=False)


# A compile after torch._dynamo.reset() dropped the function's compiled code.
_AGAIN = Cause(category="other", source="", guard="", text="", reset=True)


def _merged_dims(found: Iterable[DynamicDims]) -> tuple[DynamicDims, ...]:
    """One entry per tensor: the dims any compile treats as dynamic."""
    dims: dict[str, set[int]] = {}
    for d in found:
        dims.setdefault(d.source, set()).update(d.dims)
    return tuple(DynamicDims(source, tuple(sorted(ds))) for source, ds in dims.items())


def count_compiles(compiles: Iterable[int], refused: Iterable[int]) -> int:
    """Compiles of a frame from the compile numbers seen: every number up to the highest compile, less
    those refused at the recompile limit. Each call that reaches the compiler takes the next number, so
    a number the log never shows (its lines were not captured) was a compile too, and a refused number
    is none, even when compiles follow it (the limit raised, isolated regions); the numbers below a
    refused one were compiles (a log that begins at the limit warning still shows that many)."""
    refused = set(refused)
    top = max((*compiles, *refused), default=-1)
    return top + 1 - sum(1 for n in refused if n <= top)


def _located(frame: _Frame, c: Cause) -> Cause:
    """A size guard whose text names no line of the user's, with the line the compile that added it logged."""
    if not c.shape or c.location:
        return c
    cid = c.cache_entry
    found = frame.size_guard_lines.get(cid.number, {}).get(condition_key(c.condition)) if cid is not None else None
    return replace(c, location=found[0], code=found[1]) if found is not None else c


def _summary(
    frame: _Frame,
    roles: Mapping[str, str],
    listings: bool,
    ledger: LedgerIndex,
    compiled: AbstractSet[tuple[str, str]] = frozenset(),
    records: Sequence[RefusalRecord] = (),
) -> FunctionSummary:
    numbers = sorted(n for n in frame.compiles if n not in frame.refused)
    events = []
    variety = Variety(frame.pins)
    for n in numbers:
        if n == 0:
            continue
        compile_id = frame.frame_id.compile(n)
        if frame.announced.get(n):
            causes = tuple(_located(frame, classify_failure(f.text, f.cache_entry, roles, f.stack)) for f in frame.announced[n])
            event = RecompileEvent(compile_id, True, causes)
            against = frame.against.get(n)
            events.append(decisive(event, frame.changed.get(n, {}), roles, frame.pins, n, against, variety, frame.sizes.get(n)))
        else:
            # Not announced, or announced without its reasons (a log cut after the header): the cause
            # is inferred from the guard listings; ``logged`` says whether torch announced it.
            inferred = tuple(cause_from_changed_guard(b, a, roles) for b, a in frame.inferred.get(n, ()))
            events.append(RecompileEvent(compile_id, n in frame.announced, inferred or (_UNKNOWN,)))
    unlisted = [n for n in numbers if listings and n in frame.started and n not in frame.listed]
    failed = tuple(ledger.failure(frame.name, frame.line, frame.frame_id, n) for n in unlisted)
    later = max(numbers, default=-1)
    hits = []
    for i, hit in enumerate(frame.limit_hits):
        at = frame.limit_at.get(i)
        outcome = ledger.limit_outcome(frame.name, frame.line, at)
        if outcome == "raised" or at is None:
            pass
        elif later > at:
            outcome = "compiled_again"
        elif any(r > at for r in frame.refused):
            outcome = "raised"  # a frame torch runs eagerly for good is never offered to it again
        # The refused call is announced with every entry's reason, and has no listing: the cause that matters
        # is found among those reasons as a recompile's is (torch's last reason is only the newest entry's).
        failures = frame.announced.get(at, ()) if at is not None else frame.limit_failures.get(i, ())
        refused = tuple(_located(frame, classify_failure(f.text, f.cache_entry, roles, f.stack)) for f in failures)
        cause = refused_cause(refused, frame.pins, roles, variety, at) if refused else None
        cause = cause or classify_last_reason(hit.last_reason, roles)
        hits.append(LimitHit(hit.compile_id, hit.limit, hit.value, hit.last_reason, outcome, cause))
    dims = _merged_dims(frame.dynamic)
    printed: dict[tuple[str, ...], int] = {}
    for reasons in frame.printed_refusals:
        printed[reasons] = printed.get(reasons, 0) + 1
    records = (
        *records,
        *(RefusalRecord("fail_on_recompile", frame.name, frame.file, frame.line, len(r), r or None, n) for r, n in printed.items()),
    )
    refusals = tuple(_refusal(r, roles, frame.pins, variety) for r in records)
    return FunctionSummary(
        name=frame.name,
        file=frame.file,
        line=frame.line,
        frame_ids=(frame.frame_id,),
        compiles=count_compiles(frame.compiles, frame.refused),
        recompile_events=tuple(events),
        limit_hits=tuple(hits),
        graph_breaks=tuple(frame.graph_breaks.values()),
        failed_compiles=failed,
        compiled_for=tuple(dict.fromkeys(frame.compiled_for[n] for n in sorted(frame.compiled_for))),
        dynamic_dims=dims,
        guard_entries=tuple(frame.entry_guards[n] for n in sorted(frame.entry_guards)),
        refusals=refusals,
        resume=_resume(
            frame, roles, [c.source for e in events for c in (*e.causes, *e.also)] + [h.cause.source for h in hits if h.cause]
            + [d.source for d in dims], compiled,
        ),
    )


def _resume(frame: _Frame, roles: Mapping[str, str], sources: Iterable[str], compiled: AbstractSet[tuple[str, str]]) -> Resume | None:
    """A resume function's user function and line, and what the stack slots its causes name hold.
    torch 2.2's ``resume_in_f`` is one only when ``f`` of the same file was compiled too (``compiled``)."""
    resume = resume_of(frame.name, frame.line)
    loose = resume_of(frame.name, frame.line, loose=True)
    if resume is None and loose is not None and (frame.file, loose.function) in compiled:
        resume = loose
    if resume is None:
        return None
    held = roles.held if isinstance(roles, Roles) else ()
    indexes = sorted({i for s in sources if (i := slot_index(s)) is not None})
    slots = tuple(StackSlot(slot_name(i), held[i] if i < len(held) else "") for i in indexes)
    return replace(resume, slots=slots)


def with_refusals(
    functions: Sequence[FunctionSummary], records: Sequence[RefusalRecord], roles: RolesLookup = local_roles
) -> tuple[FunctionSummary, ...]:
    """The functions of one process with the calls a compiler stance refused them (its ledger's stance
    records), each refusal's cause classified like a recompile's. A function the log shows no compile
    of (its lines were lost) gets a summary of its own: its refusals are not dropped."""
    by_key: dict[tuple[str, str, int | None], list[Refusal]] = {}
    for r in records:
        by_key.setdefault((r.name, r.file, r.line), []).append(_refusal(r, roles(r.file, r.name, r.line)))
    out = []
    for f in functions:
        found = by_key.pop((f.name, f.file, f.line), None)
        out.append(replace(f, refusals=f.refusals + tuple(found)) if found else f)
    for (name, file, line), refusals in by_key.items():
        # Named as a frame the log names without a compile id is (_frame_named): a process label can tag it.
        out.append(FunctionSummary(name, file, line, (FrameId(f"?{name}@{file}:{line}"),), 0, (), refusals=tuple(refusals)))
    return tuple(out)


def _refusal(
    record: RefusalRecord, roles: Mapping[str, str], entries: Mapping[int, Entry] | None = None, variety: Variety | None = None
) -> Refusal:
    """A refusal record as the model's. The call has no guard listing of its own, as a call refused at the
    recompile limit has none: the cause that matters is found among torch's reasons (one per cache entry)
    by the same rule (:func:`guarddiag.pins.refused_cause`) where the frame's entries are known, else it
    is torch's reason against the newest entry (the record keeps them oldest first)."""
    causes = tuple(c for c in (classify_last_reason(r, roles) for r in reversed(record.reasons or ())) if c is not None)
    cause = refused_cause(causes, entries, roles, variety) if causes and entries else None
    return Refusal(record.stance, record.calls, record.entries, record.reasons or (), cause or (causes[0] if causes else None))
