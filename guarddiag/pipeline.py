"""The parse pipeline (lines -> events -> :class:`RunBuilder` -> functions and :class:`ParseStats`),
driven by :class:`LogReader` for ``guarddiag run``, ``parse``, ``explain`` and the in-process watch;
and ``guarddiag parse``: a run record from a log captured elsewhere (CI log, torchrun, a paste).

A file with no framed torch line is read as a paste (:mod:`guarddiag.logparse.paste`): torch's
messages found by their text. Both readers see the lines in one pass: the paste reader only until
the first framed torch line, after which the log is a log and the paste reader is dropped; unless
the whole file is a short framed excerpt in which the log parser names no function, while
the paste reader finds messages (framed lines that show a message without its first line, or in a
form the log parser does not know): then the paste reading is the result.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TextIO

from guarddiag.build import RolesLookup, RunBuilder
from guarddiag.errors import InputError
from guarddiag.filekinds import is_trace_text, wrong_file
from guarddiag.guardkinds import PINNING_KINDS
from guarddiag.ids import MAIN_PROCESS, Process, rank_prefix, split_rank
from guarddiag.ledger import CompileRecord, RefusalRecord, compiles_in
from guarddiag.logparse.encoding import open_log
from guarddiag.logparse.events import Event
from guarddiag.logparse.jobdir import Layout, ProcessFiles, layout, tee_ranks, trace_layout
from guarddiag.logparse.parser import LogParser
from guarddiag.logparse.paste import WINDOW, PasteReader, framed_part, mangled_line
from guarddiag.logparse.trace import TraceParser
from guarddiag.merge import add_stats, in_process
from guarddiag.model import FunctionSummary, Job, JobProcess, ParseStats, Run, StanceUse
from guarddiag.pins import SPECIALIZED
from guarddiag.sourceinfo import local_roles

# The guard kinds counting needs (the others are skipped unread): the pinning kinds of the guard-kind
# table, and the shape environment's, whose `L['n'] == 3` pins a number automatic dynamic made symbolic.
COUNTED_GUARDS = PINNING_KINDS | {SPECIALIZED}

Parsed = tuple[tuple[FunctionSummary, ...], ParseStats]
# Bytes of standard input looked at to tell a TORCH_TRACE from a log: a record's glog prefix and its kind.
_TRACE_HEAD = 512


class LogReader:
    """One log read into the run model: lines -> :class:`LogParser` events -> :class:`RunBuilder`.

    ``guards``: the guard kinds listings keep (None: every guard, as explain and the watch read them);
    ``locations``: False leaves guards without their user-code location; ``on_event``: sees each
    event before the builder does. Lines come whole (:meth:`read`) or one by one (:meth:`feed`).
    """

    def __init__(
        self,
        roles: RolesLookup = local_roles,
        ledger: Sequence[CompileRecord] = (),
        *,
        refusals: Sequence[RefusalRecord] = (),
        guards: frozenset[str] | None = COUNTED_GUARDS,
        locations: bool = True,
        on_event: Callable[[Event], None] | None = None,
        trace: Process | None = None,
    ) -> None:
        """``trace``: the lines are a TORCH_TRACE file of that process (its ledger is in it), not a log."""
        self.parser: LogParser | TraceParser = (
            LogParser(keep_guards=guards, locations=locations) if trace is None else TraceParser(guards, locations, trace)
        )
        self.builder = RunBuilder(roles, ledger, refusals)
        self._on_event = on_event

    def add(self, event: Event) -> None:
        """Fold one event in (events from another reader: a paste, an event stream)."""
        if self._on_event is not None:
            self._on_event(event)
        self.builder.add(event)

    def feed(self, line: str) -> None:
        """Take one line (the watch, as torch logs it)."""
        for event in self.parser.feed(line):
            self.add(event)

    def read(self, lines: Iterable[str]) -> LogReader:
        """Take a whole stream, on the parser's hot path."""
        with paused_gc():
            for event in self.parser.parse(lines):
                self.add(event)
        return self

    def result(self) -> Parsed:
        """Close what is still open; the functions and the parse stats of every line taken."""
        for event in self.parser.finish():
            self.add(event)
        trace = self.parser if isinstance(self.parser, TraceParser) else None
        if trace is not None:
            self.builder.add_ledger(trace.records)
        functions, unnamed = self.builder.functions()
        c = self.parser.counters
        return functions, ParseStats(
            c.lines, c.torch_lines, c.unrecognized, tuple(c.samples), unnamed,
            trace_records=trace.envelopes if trace else None, trace_gaps=trace.gaps() if trace else (),
        )

    def snapshot(self) -> LogReader:
        """A copy to finish while this one goes on reading (``on_event`` is shared, not copied)."""
        return copy.deepcopy(self, {id(self._on_event): self._on_event})


def build_from_lines(
    lines: Iterable[str], roles: RolesLookup = local_roles, ledger: Sequence[CompileRecord] = ()
) -> Parsed:
    """A whole log stream (a torch log, not a paste) read into per-function summaries and parse stats."""
    return LogReader(roles, ledger).read(lines).result()


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection meanwhile: a big log's guards are hundreds of thousands of live
    objects, making no cycles, that the collector would scan again and again (a fifth of explain's time)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def parse_log(path: str) -> Run:
    """Parse a log file (``-`` for stdin); undecodable bytes are replaced, never fatal."""
    return parse_logs([path])


def parse_logs(paths: Sequence[str]) -> Run:
    """Parse the logs given to ``guarddiag parse`` as :func:`guarddiag.logparse.jobdir.layout` splits
    them: one log, pieces of one log, per-rank files, or a torchrun ``--log-dir``."""
    refuse_guarddiag_files(paths)
    traces = trace_layout(paths)
    if traces is not None:
        return _parse_traces(traces, paths)
    if list(paths) == ["-"]:
        stdin = open_log("-")
        if _is_trace(stdin):
            return _parse_traces(_STDIN_TRACE, paths, stdin)
        return _parsed_log(_read_pieces(paths, stdin), paths, layout(paths))
    plan = layout(paths)
    if plan.read_as in ("one_log", "pieces"):
        return _parsed_log(_read_pieces(plan.processes[0].files), paths, plan)
    functions: tuple[FunctionSummary, ...] = ()
    stats = ParseStats()
    for process in plan.processes:
        with contextlib.ExitStack() as stack:
            streams = [(path, _open(path, stack)) for path in process.files]
            lines = _lines(streams, whole=True)
            found, found_stats = read_log(_unprefixed(lines, process.rank) if process.rank is not None else lines)
        functions += tuple(in_process(f, process.process) for f in found) if process.process else found
        stats = add_stats(stats, found_stats)
    return _parsed_log((functions, stats), paths, plan)


def _parsed_log(parsed: Parsed, paths: Sequence[str], plan: Layout) -> Run:
    """The run of logs read as ``plan`` says; refused when no line of them was torch's."""
    functions, stats = parsed
    where = "standard input" if list(paths) == ["-"] else ", ".join(paths)
    if stats.torch_lines == 0 and not stats.paste_messages:
        refuse_guarddiag_files(paths, leading=False)  # a report after the script's own output (run -f json > FILE)
        raise InputError(
            f"{where}: no torch log lines and no torch messages in {stats.lines} lines read; capture the log with "
            "TORCH_LOGS=dynamo,guards,recompiles,graph_breaks (or use `guarddiag run`)"
        )
    job = None
    if plan.read_as != "one_log":
        processes = tuple(JobProcess(p.process, p.rank, p.local_rank, p.named_by, p.files) for p in plan.processes)
        job = Job(plan.read_as, processes, skipped=plan.skipped)
    # A log shows a stance only where the script printed fail_on_recompile's error into it.
    stances = tuple(dict.fromkeys(StanceUse(r.stance, True, f.process) for f in functions for r in f.refusals))
    return Run(functions=functions, parse=stats, source="parse", log_path=where, job=job, stances=stances)


@dataclass(frozen=True)
class TraceRead:
    """What TORCH_TRACE files held: the functions and parse stats of all of them, torch's compile attempts
    (one count for a lone process, None for several: each process's is its own), and the torch versions named."""

    functions: tuple[FunctionSummary, ...]
    stats: ParseStats
    torch_compiles: int | None
    versions: tuple[str, ...]


def read_traces(plan: Layout, stdin: TextIO | None = None, **reader: object) -> TraceRead:
    """The trace files of ``plan`` (:func:`~guarddiag.logparse.jobdir.trace_layout`), each read as its
    process with torch's records of its compiles; ``stdin``: standard input already opened (``-``);
    ``reader``: :class:`LogReader`'s options (explain keeps every guard)."""
    functions: tuple[FunctionSummary, ...] = ()
    stats = ParseStats()
    versions: dict[str, None] = {}
    compiles: list[int | None] = []
    for process in plan.processes:
        (path,) = process.files
        with contextlib.ExitStack() as stack:
            log = LogReader(trace=process.process, **reader)  # type: ignore[arg-type]
            found, found_stats = log.read(stdin if path == "-" and stdin is not None else _open(path, stack)).result()
        parser = log.parser
        assert isinstance(parser, TraceParser)
        if parser.torch_version:
            versions[parser.torch_version] = None
        functions += found
        stats = add_stats(stats, found_stats)
        compiles.append(compiles_in(tuple(parser.records)))
    return TraceRead(functions, stats, compiles[0] if len(compiles) == 1 else None, tuple(versions))


# A TORCH_TRACE piped in: one process.
_STDIN_TRACE = Layout("trace", (ProcessFiles(("-",), MAIN_PROCESS, None, None, "position"),))


def _is_trace(stream: TextIO) -> bool:
    """Whether a stream (standard input) begins as a TORCH_TRACE, looked at without taking a byte from it."""
    head = stream.buffer.peek(_TRACE_HEAD)[:_TRACE_HEAD]  # type: ignore[attr-defined]
    return is_trace_text(head.decode("utf-8", errors="replace"))


def _parse_traces(plan: Layout, paths: Sequence[str], stdin: TextIO | None = None) -> Run:
    """A run of TORCH_TRACE files: each file a process, read with torch's records of its compiles in it."""
    read = read_traces(plan, stdin)
    where = "standard input" if list(paths) == ["-"] else ", ".join(paths)
    job = None
    if len(plan.processes) > 1 or plan.processes[0].process != MAIN_PROCESS:
        job = Job(plan.read_as, tuple(JobProcess(p.process, p.rank, p.local_rank, p.named_by, p.files) for p in plan.processes))
    return Run(functions=read.functions, parse=read.stats, source="parse", log_path=where, job=job,
               torch_version=read.versions[0] if len(read.versions) == 1 else None, torch_compiles=read.torch_compiles)


def refuse_guarddiag_files(paths: Sequence[str], leading: bool = True) -> None:
    """Refuse one of guarddiag's own files (a run record, a baseline, a report) given as a torch log,
    naming it and the command that reads it: its text holds no torch line, so the advice would be to
    capture the log again. ``leading``: only files that begin as guarddiag's do (before reading)."""
    for path in paths:
        wrong = wrong_file(path, "log", leading) if path != "-" and os.path.isfile(path) else None
        if wrong:
            raise InputError(wrong)


def _read_pieces(paths: Sequence[str], stdin: TextIO | None = None) -> Parsed:
    """Pieces of one log (a CI log split in several files), in order, as the one log they are (``cat``
    of the pieces): one parser reads them all, so a record or a line cut at a file boundary, or compile
    ids that restart after a ``torch._dynamo.reset()`` in an earlier piece, read as in the whole log.
    torchrun ``--tee`` output names each line's worker: its lines without a rank are read as its rank's."""
    tees = tee_ranks(paths)
    with contextlib.ExitStack() as stack:
        streams = [(path, stdin if path == "-" and stdin is not None else _open(path, stack)) for path in paths]
        return read_log(_ranked_tee(_lines(streams), tees) if tees else _lines(streams))


def _ranked_tee(lines: Iterable[str], tees: dict[str, int]) -> Iterator[str]:
    """torchrun ``--tee`` output with each worker's ``[default1]:`` read as its ``[rank1]:``: its lines
    logged before ``init_process_group`` are that rank's too."""
    for line in lines:
        if line[:1] == "[":
            head, sep, rest = line.partition("]:")
            rank = tees.get(head + sep) if sep else None
            if rank is not None:
                line = rest if split_rank(rest)[0] is not None else rank_prefix(rank) + rest
        yield line


def _unprefixed(lines: Iterable[str], rank: int) -> Iterator[str]:
    """One rank's log without its ``[rankN]:`` prefixes: its lines before ``init_process_group`` (which
    have none) and after it are one process's."""
    for line in lines:
        shown, body = split_rank(line)
        yield body if shown == rank else line


def read_log(lines: Iterable[str], roles: RolesLookup = local_roles) -> Parsed:
    """The functions and parse stats of a log, or of a paste when no line is a framed torch line."""
    paste = _PasteWatch(roles)
    functions, stats = LogReader(roles).read(paste.tee(lines)).result()
    if paste.reader is None:
        return functions, stats
    if paste.excerpt:
        if any(f.name for f in functions):  # the log parser found what the excerpt shows
            return functions, stats
        shown = paste.result(stats.lines)
        return shown if shown[1].paste_messages else (functions, stats)
    return paste.result(stats.lines)


class _PasteWatch:
    """Reads the lines as a paste too, until they show they are a log.

    A log is a file with a framed torch line, unless its first ``WINDOW`` lines show a log that went
    through a browser or a terminal: a framed line holding another torch prefix (flattened), HTML
    escapes in a framed line, or a wrap width with a quarter of the lines unframed (cut at a
    terminal width). Then it is read as a paste.
    The paste reader sees at most the first ``WINDOW`` lines of a log, never the rest; a log shorter
    than that is an ``excerpt``, whose paste reading is kept for :func:`read_log` to weigh."""

    def __init__(self, roles: RolesLookup) -> None:
        self.reader: PasteReader | None = PasteReader()
        self.excerpt = False
        self._events = LogReader(roles)

    def tee(self, lines: Iterable[str]) -> Iterator[str]:
        """The lines for the log parser. A line with other output before its torch prefix (a
        progress bar, a prompt) loses that output when it is the first framed line."""
        it = iter(lines)
        seen = framed = 0
        mangled = whole = False
        for line in it:
            seen += 1
            part = framed_part(line)
            mangled = mangled or mangled_line(line, part is not None)
            self._feed(line)
            if part is not None:
                line, framed = (part if not framed else line), framed + 1
            yield line
            if framed and seen >= WINDOW:
                break
        else:
            whole = True  # every line read: a short text
        if framed and not mangled and not self._wrapped(seen, framed):
            self.excerpt = whole
            if not whole:
                self.reader = None
            yield from it
            return
        for line in it:
            if not framed and framed_part(line) is not None:
                self.reader = None  # a log after all: its first framed line comes late
                yield line
                yield from it
                return
            self._feed(line)
            yield line

    def _feed(self, line: str) -> None:
        assert self.reader is not None
        for event in self.reader.feed(line):
            self._events.add(event)

    def _wrapped(self, seen: int, framed: int) -> bool:
        """A log cut at a terminal width: its lines have a wrap width, and a quarter of them no frame."""
        assert self.reader is not None
        return self.reader.wrap_width() > 0 and (seen - framed) * 4 >= seen

    def result(self, lines: int) -> Parsed:
        """What the paste shows, once every line was read."""
        assert self.reader is not None
        for event in self.reader.finish():
            self._events.add(event)
        functions, _ = self._events.result()
        return functions, ParseStats(lines=lines, paste_messages=self.reader.messages)


def _open(path: str, stack: contextlib.ExitStack) -> TextIO:
    try:
        return stack.enter_context(open_log(path))
    except FileNotFoundError:
        raise InputError(f"{path}: no such log file; give a log file, or - to read standard input") from None
    except PermissionError:
        raise InputError(f"{path}: cannot be read (permission denied)") from None


def _lines(streams: Sequence[tuple[str, TextIO]], whole: bool = False) -> Iterator[str]:
    """Every line of the pieces as ``cat`` would join them: a piece cut mid-line continues in the next;
    ``whole``: each file ends its last line (a worker's stderr.log and stdout.log are two streams)."""
    carry = ""
    for _, stream in streams:
        if whole and carry:
            yield carry + "\n"
            carry = ""
        for line in stream:
            if carry:
                line, carry = carry + line, ""
            if line.endswith(("\n", "\r")):
                yield line
            else:
                carry = line  # only a piece's last line lacks its newline
    if carry:
        yield carry
