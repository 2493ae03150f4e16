"""The streaming log parser: lines in, events out, constant memory in the log length.

Each record kind has a small reader (a *block*, :mod:`guarddiag.logparse.blocks`) that takes
the lines belonging to it; this module frames lines and hands them to the open blocks.
Glog-style logs prefix every line of a multi-line message; older logs print the
continuation lines bare, so a bare line is offered to the most recent open block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from guarddiag.ids import CACHE_ENTRY, MAIN_PROCESS, CompileId, Process
from guarddiag.logparse.blocks import (
    GRAPH_BREAK,
    LIMIT,
    LIMIT_TAIL,
    RECOMPILING,
    RECOMPILING_TUPLE,
    TRIGGERED_TEXT,
    Block,
    GraphBreakBlock,
    GuardBlock,
    LimitBlock,
    RecompileBlock,
    ShapeFnBlock,
    recompile_from_tuple,
)
from guarddiag.logparse.events import CompileSeen, Event, FrameNamed, GuardListing, SizeGuardAdded, StanceRefusalSeen, SymbolCreated
from guarddiag.logparse.framing import Framed, frame, strip_rank
from guarddiag.logparse.guards import TALLY_DEPTH, location_of

# Artifacts whose every line guarddiag is expected to understand (--strict counts these).
OWN_ARTIFACTS = frozenset({"__guards", "__recompiles", "__recompiles_verbose", "__graph_breaks"})
MAX_SAMPLES = 5

# fail_on_recompile's RuntimeError, which a script may print into the log it writes (torch 2.7+ name the function).
_FAIL_ON_RECOMPILE = re.compile(
    r"Detected recompile when torch\.compile stance is 'fail_on_recompile'\. filename: '(?P<file>[^']*)', "
    r"function name: '(?P<name>[^']*)'"
)
_FAIL_REASON = re.compile(rf"^\s*- (?P<reason>{CACHE_ENTRY}: .*)$")

# torch._dynamo.reset() logs this (dynamo channel, INFO) before compile ids restart at [0/0].
_RESET = "torch._dynamo.reset"
_START_TRACING = re.compile(r"torchdynamo start tracing (?P<name><[^>]+>|\S+)(?: (?P<file>.+?):(?P<line>\d+))?\s*$")
_START_TRACING_TEXT = "torchdynamo start tracing "


# Lines of one message share rank, compile id (as the log prints it) and its cache generation, artifact
# and origin (logger, or file:line of the call).
_Key = tuple[int | None, str | None, int, str | None, str]
# A compile id of a rank's lines in a cache generation: (rank, the id as the log prints it, generation).
_Seen = tuple[int | None, str, int]


@dataclass
class ParseCounters:
    """Counts kept while parsing; the unrecognized samples are capped."""

    lines: int = 0
    torch_lines: int = 0
    unrecognized: int = 0
    samples: list[str] = field(default_factory=list)

    def unknown(self, line: str) -> None:
        self.unrecognized += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(line[:300])


_NONE: list[Event] = []  # returned by the hot path; never appended to


class LogParser:
    """Feed lines, get events. One instance per log stream."""

    def __init__(self, keep_guards: frozenset[str] | None = None, locations: bool = True) -> None:
        """``keep_guards``: the guard kinds to report in listings (None: all of them); ``locations``:
        False leaves ``Guard.location`` (the user code line of a tree guard) empty, for readers that never show it."""
        self._keep_guards = keep_guards
        self._locations = locations
        # Without locations a guard line reads the same in every listing: read each once.
        self._seen_guards: dict | None = {} if not locations and keep_guards is None else None
        self.counters = ParseCounters()
        self._open: dict[_Key, Block] = {}
        # The one open record of each rank (a line of another record of the rank closes it): found by
        # rank, not by scanning every open record, which a paste of 100,000 ranks made quadratic.
        self._open_of_rank: dict[int | None, _Key] = {}
        self._last: Block | None = None
        self._seen_compiles: set[tuple[int | None, str]] = set()
        # torch._dynamo.reset() starts compile ids again at [0/0]: a new "start tracing" for a compile
        # that already installed its guards opens a new generation, whose frames are `0~1`, `1~1`, ...
        # A generation also opens at the reset message itself, and when a compile id starts tracing again.
        self._generation: dict[int | None, int] = {}
        self._listed: set[_Seen] = set()
        self._started: set[_Seen] = set()
        self._gen_used: set[int | None] = set()
        self._last_cid: tuple[int | None, str | None, int] = (None, None, 0)
        # Hot path: the lines of one multi-line record share their whole prefix (same timestamp,
        # compile id, artifact). While they do, skip framing and hand the body to the block.
        self._prefix = "\x00"
        self._prefix_len = 0
        self._prefix_block: Block | None = None
        # A printed fail_on_recompile error being read: its function, then its reasons line by line.
        self._refusal: tuple[str, str, list[str]] | None = None

    def parse(self, lines: Iterable[str]) -> Iterator[Event]:
        """Parse a whole stream: every event, in log order, then those of still-open blocks."""
        feed = self.feed
        counters = self.counters
        skipped = 0
        # Hottest path, inlined with its state in locals (re-read after every feed): a guard-tree line
        # of the open listing is counted and dismissed when its kind is not kept, and its kind and
        # expression go straight to the listing when it is (TreeReader.feed reads them the same way).
        # A listing read whole takes each tree line the same way, at TreeReader.tree_line.
        # Every tree line, kept or not, is counted under its object (GuardOwners: where the guards come from).
        skippable, prefix, plen, keep_raw, tree_line, owner_manager, tally = None, "", 0, None, None, None, None
        for line in lines:
            if skippable is not None and line.startswith(prefix):
                start = line.find("+- ", plen)
                if start >= 0 and line[plen] in "+|":  # a tree line, as TreeReader.feed tells them
                    end = line.find(":", start + 3)
                    label = line[start + 3 : end] if end > 0 else line[start + 3 :].rstrip()
                    if label.isupper():  # a leaf: tallied under the manager above it (GuardOwners)
                        tally[min((start - plen) // 2, TALLY_DEPTH)] += 1  # type: ignore[index]
                    elif "Manager" in label:
                        owner_manager((start - plen) // 2, line, end)  # type: ignore[misc]
                    if label not in skippable:
                        skipped += 1
                        continue
                    if end > start + 3:
                        keep_raw(label, line[end + 1 :].strip())
                        skipped += 1
                        continue
            elif tree_line is not None and line.startswith(prefix):
                start = line.find("+- ", plen)
                if start >= 0 and line[plen] in "+|":
                    tree_line((start - plen) // 2, line[start + 3 :].rstrip())
                    skipped += 1
                    continue
            events = feed(line)
            block = self._prefix_block
            skippable = block.skippable if block is not None else None
            keep_raw = block.keep_raw if skippable is not None else None
            owner_manager = block.owner_manager if skippable is not None else None
            tally = block.tally if skippable is not None else None
            tree_line = block.tree_line if block is not None else None
            prefix, plen = self._prefix, self._prefix_len
            if events:
                counters.lines += skipped
                counters.torch_lines += skipped
                skipped = 0
                yield from events
        counters.lines += skipped
        counters.torch_lines += skipped
        yield from self.finish()

    def feed(self, raw: str) -> list[Event]:
        """Take one line (trailing newline allowed); return the events it completed."""
        counters = self.counters
        counters.lines += 1
        line = raw.rstrip("\r\n")
        if line.startswith(self._prefix):
            block = self._prefix_block
            if block is not None and block.feed(line[self._prefix_len :]):
                counters.torch_lines += 1
                return _NONE
        return self._feed_framed(line)

    def _feed_framed(self, line: str) -> list[Event]:
        self._prefix_block = None
        framed = frame(line)
        gen = 0
        if framed is not None:
            if framed.compile_id is not None:
                gen = self._in_generation(framed)
            elif framed.body.strip() == _RESET and framed.rank in self._gen_used:
                self._new_generation(framed.rank)
        if framed is None:
            _, body = strip_rank(line)
            ended, taken = self._printed_refusal(body)
            if not taken and self._last is not None and self._last.accepts_bare(body):
                self._last.feed(body)
            return ended
        self.counters.torch_lines += 1
        out: list[Event] = self._end_refusal() if self._refusal is not None else []
        if framed.compile_id is not None:
            seen = self._compile_seen(framed, gen)
            if seen is not None:
                out.append(seen)
        # Artifact logs continue one record across several logging calls (GUARDS: header, then the tree).
        key = (framed.rank, framed.compile_id, gen, framed.artifact, "" if framed.artifact else framed.origin)
        other = self._open_of_rank.get(framed.rank)
        if other is not None and other != key:
            # A glog-style message is written whole: a line of another record ends it.
            out.extend(self._close(other))
        block = self._open.get(key)
        if block is not None:
            if block.feed(framed.body):
                self._remember_prefix(line, framed, block)
                return out
            out.extend(self._close(key))
        out.extend(self._start(key, framed, line))
        self._remember_prefix(line, framed, self._open.get(key))
        return out

    def _remember_prefix(self, line: str, framed: Framed, block: Block | None) -> None:
        self._last = block if block is not None else self._last
        if block is None:
            return
        self._prefix_len = len(line) - len(framed.body)
        self._prefix = line[: self._prefix_len] if self._prefix_len else "\x00"
        self._prefix_block = block

    def finish(self) -> list[Event]:
        """Close every open block (a truncated log still yields what it had)."""
        out: list[Event] = self._end_refusal()
        for key in list(self._open):
            out.extend(self._close(key))
        return out

    def _printed_refusal(self, body: str) -> tuple[list[Event], bool]:
        """What an unframed line does to a printed fail_on_recompile error: the events it ends (the error
        read so far, when the line is no part of it) and whether the line was its own (its first line, or
        a reason under it)."""
        if self._refusal is not None:
            m = _FAIL_REASON.match(body)
            if m is not None:
                self._refusal[2].append(m["reason"])
                return _NONE, True
            if body.strip().startswith(TRIGGERED_TEXT):
                return _NONE, True
        m = _FAIL_ON_RECOMPILE.search(body) if "fail_on_recompile" in body else None
        ended = self._end_refusal() if self._refusal is not None else _NONE
        if m is not None:
            self._refusal = (m["name"], m["file"], [])
        return ended, m is not None

    def _end_refusal(self) -> list[Event]:
        if self._refusal is None:
            return []
        name, file, reasons = self._refusal
        self._refusal = None
        return [StanceRefusalSeen(name, file, tuple(reasons))]

    def _in_generation(self, framed: Framed) -> int:
        """The cache generation of a line's compile id (0 for compiled autograd's own id, ``!0``, which
        names no frame's compile); a compile id that starts tracing again starts the next generation."""
        rank, text = framed.rank, framed.compile_id or ""
        gen = self._generation.get(rank, 0)
        self._gen_used.add(rank)
        if "start tracing" in framed.body and start_tracing(framed.body):
            here = (rank, text, _generation_of(text, gen))
            # A compile id that already started tracing, or (first attempt) already installed guards,
            # starts again only after torch._dynamo.reset(): its ids restart at [0/0].
            if here in self._started or ("_" not in text and here in self._listed):
                gen = self._new_generation(rank)
                here = (rank, text, _generation_of(text, gen))
                self._gen_used.add(rank)
            self._started.add(here)
        return _generation_of(text, gen)

    def _new_generation(self, rank: int | None) -> int:
        gen = self._generation[rank] = self._generation.get(rank, 0) + 1
        self._gen_used.discard(rank)
        return gen

    def _compile_seen(self, framed: Framed, gen: int) -> CompileSeen | None:
        if (framed.rank, framed.compile_id, gen) == self._last_cid:
            return None
        self._last_cid = (framed.rank, framed.compile_id, gen)
        cid = CompileId.parse(framed.compile_id, _process(framed.rank))
        if cid is None:
            return None
        cid = cid.in_generation(gen).first_attempt
        key = (framed.rank, cid.compile_key)
        if key in self._seen_compiles:
            return None
        self._seen_compiles.add(key)
        return CompileSeen(cid)

    def _close(self, key: _Key) -> list[Event]:
        block = self._open.pop(key)
        if self._open_of_rank.get(key[0]) == key:
            del self._open_of_rank[key[0]]
        if self._last is block:
            self._last = None
        events = block.close()
        if key[1] is not None and any(isinstance(event, GuardListing) for event in events):
            self._listed.add((key[0], key[1].partition("_")[0], key[2]))  # as _in_generation looks it up
        return events

    def _start(self, key: _Key, f: Framed, line: str) -> list[Event]:
        body = f.body
        # The record's compile id, parsed once here where it is cut from its first line.
        process = _process(f.rank)
        parsed = CompileId.parse(f.compile_id, process)
        cid = parsed.in_generation(key[2]) if parsed is not None else None
        # Whether the line names a compile id or a rank at all (a limit warning's tail is read only then).
        placed = f.compile_id is not None or f.rank is not None
        block: Block | None = None
        if f.artifact == "__guards":
            text = body.strip()
            if text.startswith("GUARDS:"):
                block = GuardBlock(cid, process, self._keep_guards, self._locations, self._seen_guards)
            elif text.startswith("Python shape guard function"):
                block = ShapeFnBlock()
            elif text.startswith("Guard eval latency") or not text:
                return []
        elif f.artifact in ("__recompiles", "__recompiles_verbose") and not RECOMPILING_TUPLE.match(body):
            m = RECOMPILING.match(body.strip())
            if m is not None:
                block = RecompileBlock(cid, process, m)
        elif f.artifact in ("__recompiles", None) and RECOMPILING_TUPLE.match(body):
            events = recompile_from_tuple(cid, process, body)
            if events is None:
                self.counters.unknown(line)
            return events or []
        if block is None and GRAPH_BREAK.match(body) and f.artifact in ("__graph_breaks", None):
            block = GraphBreakBlock(cid, process, body, f.artifact == "__graph_breaks")
        if block is None:
            m = LIMIT.search(body)
            if m is not None:
                block = LimitBlock(cid, process, m)
            elif LIMIT_TAIL.match(body) and placed:
                block = LimitBlock(cid, process, None)  # the warning's first line is above the log's first line
                block.feed(body)
        if block is None:
            m = start_tracing(body)
            if m is not None:
                return [FrameNamed(cid, m["name"], m["file"] or "", int(m["line"]) if m["line"] else None, process)]
            if f.artifact is None and placed and ("[guard added]" in body or "create_symbol " in body):
                shape = shape_env_event(cid, process, body)
                return [shape] if shape is not None else []
            if f.artifact in OWN_ARTIFACTS:
                self.counters.unknown(line)
            return []
        self._open[key] = block
        self._open_of_rank[key[0]] = key
        self._last = block
        return []


# torch's shape environment (symbolic_shapes.py, dynamo channel): a symbol made for a source, a guard added over symbols.
_CREATE_SYMBOL = re.compile(r"create_symbol (?P<sym>[a-z]+\d+) = (?P<value>\S+) for (?P<src>\S+) \[")
_GUARD_ADDED = re.compile(r"\beval (?P<expr>.+?) \[guard added\] ?(?P<rest>.*)$")


def _process(rank: int | None) -> Process:
    """The process of a line: the rank its ``[rank1]:`` prefix names, else the log's own."""
    return MAIN_PROCESS if rank is None else Process.of_rank(rank)


def _generation_of(compile_id: str, generation: int) -> int:
    """The generation a compile id is read in: none for an id that names no frame's compile (``!0``)."""
    return generation if "/" in compile_id else 0


def shape_env_event(cid: CompileId | None, process: Process, body: str) -> SymbolCreated | SizeGuardAdded | None:
    """A shape environment's line: a symbol it created for a source, or a guard it added (not one it suppressed)."""
    m = _CREATE_SYMBOL.search(body)
    if m is not None:
        return SymbolCreated(cid, m["sym"], m["src"], m["value"], process)
    m = _GUARD_ADDED.search(body)
    if m is None or m["expr"].startswith("[guard suppressed]"):
        return None
    rest = m["rest"].partition(", for more info")[0]
    code, _, comment = rest.partition("  # ")
    location = location_of(comment) if comment else ""
    return SizeGuardAdded(cid, m["expr"].strip(), location, " ".join(code.split()) if location else "", process)


def start_tracing(body: str) -> re.Match[str] | None:
    """``[Step 1: ]torchdynamo start tracing NAME FILE:LINE`` at the end of ``body``. Only its last
    occurrence is tried: a search from every occurrence took time quadratic in a line that repeats it."""
    at = body.rfind(_START_TRACING_TEXT)
    return _START_TRACING.match(body, at) if at >= 0 else None
