"""In-process recompile counting: ``with guarddiag.watch() as w: ...`` then ``w.recompiles``.

torch's own log records are captured while the block runs, formatted by torch's own
formatter into the glog-style lines ``guarddiag run`` reads from a file, and fed to the
same parse pipeline (:class:`guarddiag.pipeline.LogReader`), so counts and causes are the ones
``guarddiag run`` would report for the same code.

What is counted: compiles that happen *inside* the block. torch numbers frames
process-wide, so a function compiled before the block and recompiled inside it shows up
as compile ``[3/2]``; that counts as one compile and one recompile of the block.
``recompiles`` are the block's compiles whose compile number is above 0, i.e. every
recompile of a frame whether its first compile was inside the block or before it.
``torch._dynamo.reset()`` is never called here; call it yourself for a clean slate.

While any watch is active, torch's ``dynamo`` (INFO), ``guards``, ``recompiles`` and
``graph_breaks`` logs are on; a filter on each torch logger hands every record to the
watches and lets through to handlers only what torch would have emitted without the watch,
so torch's console, pytest's log capture and your own handlers see no flood. When the last
active watch ends, torch's log state, logger levels, filters and handlers are as before.
"""

from __future__ import annotations

import copy
import logging
import sys
import threading
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from guarddiag.ids import CompileId, FrameId
from guarddiag.logparse.events import CompileSeen, Event
from guarddiag.model import Cause, FunctionSummary, Run, lost_lines
from guarddiag.pipeline import LogReader
from guarddiag.render.watch import watch_report, watch_warnings

__all__ = ["Watch", "WatchError", "function_recompiles", "watch"]

# The channels `guarddiag run` asks for (runner.REQUIRED_LOGS): the same lines, the same counts.
_ARTIFACTS = ("guards", "recompiles", "graph_breaks")
_DYNAMO_LEVEL = logging.INFO
_TRACE_LOGGER = "torch.__trace"


class WatchError(RuntimeError):
    """The watch cannot capture torch's logs in this process (too old a torch, misuse)."""


class _Capture:
    """Torch's logging, redirected into every active watch; installed by the first watch, undone by the last.

    Each record is taken by a filter on the logger that created it, before any handler sees it: it is fed to
    the watches, and dropped unless torch would have emitted it without the watch. So torch's console, pytest's
    log capture and a user's own handlers get exactly what they got before, not the records the watch turned on.
    """

    def __init__(self) -> None:
        import torch
        import torch._dynamo  # noqa: F401  (registers dynamo's loggers and artifact loggers before we configure them)

        internal = getattr(getattr(torch, "_logging", None), "_internal", None)
        needed = ("log_state", "log_registry", "configure_artifact_log", "TorchLogsFormatter", "_set_log_state")
        missing = [name for name in needed if not hasattr(internal, name)]
        if missing:
            raise WatchError(
                f"guarddiag.watch cannot capture logs of torch {torch.__version__}: torch._logging._internal lacks "
                f"{', '.join(missing)}; use torch >= 2.1 or run the script under `guarddiag run`"
            )
        self._internal: Any = internal
        self.watches: list[Watch] = []
        self._saved_state = internal.log_state
        registry = internal.log_registry
        self._registered = sorted(registry.get_log_qnames())
        self._artifact_qnames = set(registry.get_artifact_log_qnames())
        side = set(getattr(registry, "get_child_log_qnames", set)()) | self._artifact_qnames
        self._saved_levels = {q: (logging.getLogger(q).level, logging.getLogger(q).propagate)
                              for q in [*self._registered, *sorted(side)]}
        # A fresh formatter: TORCH_LOGS_FORMAT may have given torch's default one a format the parser cannot read.
        self.formatter: logging.Formatter = internal.TorchLogsFormatter()
        self._intake = _Intake(self)
        # Reports a failure to read a record the way logging reports its own (a traceback on stderr), then goes on.
        self._intake_errors = logging.Handler()
        self._filtered: list[logging.Logger] = []
        self._forwarders: dict[str, _Forwarder] = {}
        self._was_enabled_cache: dict[tuple[str, int], bool] = {}
        try:
            self._install(registry)
        except BaseException:
            self.restore()
            raise

    def _install(self, registry: Any) -> None:
        internal = self._internal
        for logger in list(logging.root.manager.loggerDict.values()):
            if isinstance(logger, logging.Logger) and (logger.name == "torch" or logger.name.startswith("torch.")):
                self.take_from(logger)
        # Never mutate the current state: it may be the lru_cached object torch parsed from TORCH_LOGS.
        state = copy.deepcopy(self._saved_state)
        for qname in _dynamo_qnames(registry):
            level = state.log_qname_to_level.get(qname)
            state.log_qname_to_level[qname] = min(level, _DYNAMO_LEVEL) if isinstance(level, int) else _DYNAMO_LEVEL
            logging.getLogger(qname).setLevel(state.log_qname_to_level[qname])
        state.artifact_names.update(_ARTIFACTS)
        internal._set_log_state(state)
        for qname in self._artifact_qnames:
            internal.configure_artifact_log(logging.getLogger(qname))
        # Registered loggers do not propagate: every torch record ends at one of them. A record of a logger
        # created during the block has no filter yet; the forwarder there still feeds it to the watches.
        for qname in self._registered:
            forwarder = self._forwarders[qname] = _Forwarder(self)
            logging.getLogger(qname).addHandler(forwarder)

    def take_from(self, logger: logging.Logger) -> None:
        """Put the intake filter on ``logger`` (once)."""
        if self._intake not in logger.filters:
            logger.addFilter(self._intake)
            self._filtered.append(logger)

    def restore(self) -> None:
        """Put torch's log state, levels, filters and handlers back as they were before the first watch."""
        internal = self._internal
        internal._set_log_state(self._saved_state)
        for logger in self._filtered:
            logger.removeFilter(self._intake)
        for qname, forwarder in self._forwarders.items():
            logging.getLogger(qname).removeHandler(forwarder)
        changed = False
        for qname, (level, propagate) in self._saved_levels.items():
            logger = logging.getLogger(qname)
            if logger.level != level:
                # setLevel would clear the level cache of every logger, once per logger: once is enough.
                logger.level = level
                changed = True
            logger.propagate = propagate
        if changed:
            logging.Logger.manager._clear_cache()
        # Artifact loggers first created inside the block were configured for the watch's state: redo them.
        for qname in set(internal.log_registry.get_artifact_log_qnames()) - self._artifact_qnames:
            logger = logging.getLogger(qname)
            logger.setLevel(logging.NOTSET)
            logger.propagate = True
            internal.configure_artifact_log(logger)

    def take(self, record: logging.LogRecord) -> bool:
        """Feed ``record`` to the watches once; True if torch would have emitted it without a watch."""
        # torch.__trace carries TORCH_TRACE's structured records, never part of the text log `guarddiag run` reads.
        if getattr(record, "_guarddiag_capture", None) is not self and record.name != _TRACE_LOGGER:
            record._guarddiag_capture = self
            try:
                lines = self.formatter.format(record).split("\n")
                for w in list(self.watches):
                    w._feed(lines)
            except Exception:  # noqa: BLE001  (logging must never raise into the code being compiled)
                self._intake_errors.handleError(record)
        return self.was_enabled(record.name, record.levelno)

    def was_enabled(self, name: str, levelno: int) -> bool:
        """Whether logger ``name`` emitted ``levelno`` records under the levels in force before the watch."""
        key = (name, levelno)
        cached = self._was_enabled_cache.get(key)
        if cached is None:
            level = logging.NOTSET
            node: logging.Logger | None = logging.getLogger(name)
            while node is not None and level == logging.NOTSET:
                level = self._saved_levels.get(node.name, (node.level, True))[0]
                node = node.parent
            cached = self._was_enabled_cache[key] = levelno >= level
        return cached


class _Intake(logging.Filter):
    """The filter on torch's loggers: feeds each record to the watches, lets through what torch showed before."""

    def __init__(self, capture: _Capture) -> None:
        super().__init__()
        self.capture = capture

    def filter(self, record: logging.LogRecord) -> bool:
        return self.capture.take(record)


class _Forwarder(logging.Handler):
    """On each registered torch logger: catches records of loggers that appeared after the watch began."""

    def __init__(self, capture: _Capture) -> None:
        super().__init__(logging.NOTSET)
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "_guarddiag_capture", None) is not self.capture:
            self.capture.take(record)
            # Its later records go through the filter, so other handlers stop seeing what the watch turned on.
            self.capture.take_from(logging.getLogger(record.name))


def _dynamo_qnames(registry: Any) -> list[str]:
    """The logger names of the ``dynamo`` alias (one name on torch 2.1, a list later)."""
    aliases = getattr(registry, "log_alias_to_log_qnames", None) or getattr(registry, "log_alias_to_log_qname", {})
    names = aliases.get("dynamo", "torch._dynamo")
    return [names] if isinstance(names, str) else list(names)


_capture_lock = threading.Lock()
_capture: _Capture | None = None


class Watch:
    """Compiles and recompiles of torch.compile'd functions while a ``with`` block runs.

    Read the results inside the block (a snapshot of what was logged so far) or after it.
    ``functions`` restricts every count to compiled functions of those names (``co_name``, e.g. ``forward``).
    """

    def __init__(self, functions: Iterable[str] | None = None) -> None:
        if isinstance(functions, str):
            functions = (functions,)
        self.only: frozenset[str] | None = frozenset(functions) if functions is not None else None
        self._lock = threading.Lock()
        # Frames whose first compile (number 0) the log showed inside the watch.
        self._first_compiled: set[FrameId] = set()
        self._reader = LogReader(guards=None, on_event=self._saw)
        self._fed = 0
        self._active = False
        self._finished: Run | None = None
        self._snapshot: tuple[int, Run] | None = None
        self._started = 0.0
        # torch's own record of each compile in the block: what the log's counts are checked against.
        self._records: list[dict] = []
        self._recorded = False

    def __enter__(self) -> Watch:
        global _capture
        if self._active or self._finished is not None:
            raise WatchError("this guarddiag.watch() was already used; create a new one for each with-block")
        with _capture_lock:
            if _capture is None:
                _capture = _Capture()
            _capture.watches.append(self)
        self._recorded = _process_hooks().add_sink(self._records.append)
        self._active = True
        self._started = time.monotonic()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        global _capture
        _process_hooks().remove_sink(self._records.append)
        with _capture_lock:
            if _capture is not None and self in _capture.watches:
                _capture.watches.remove(self)
                if not _capture.watches:
                    _capture.restore()
                    _capture = None
        with self._lock:
            self._active = False
            self._finished = self._build(self._reader, time.monotonic() - self._started)

    def _feed(self, lines: list[str]) -> None:
        """Called from whichever thread logged: the lock keeps the parser's block state whole."""
        with self._lock:
            if not self._active:
                return
            for line in lines:
                self._reader.feed(line)
            self._fed += 1

    def _saw(self, event: Event) -> None:
        if isinstance(event, CompileSeen) and event.compile_id.number == 0:
            self._first_compiled.add(event.compile_id.frame_id)

    def _build(self, reader: LogReader, duration: float | None) -> Run:
        functions, stats = reader.result()
        return Run(functions=functions, parse=stats, torch_version=_torch_version(), source="watch", duration_s=duration)

    @property
    def run(self) -> Run:
        """The run record of the block (all functions, ``source="watch"``); a snapshot while the block runs.

        Its per-function ``compiles`` follow ``guarddiag run``: counted from the frame's first compile id,
        which may lie before the block. ``Watch.compiles`` counts only the block's compiles.
        """
        with self._lock:
            if self._finished is not None:
                return self._finished
            if self._snapshot is None or self._snapshot[0] != self._fed:
                # A copy: finishing the parser closes open blocks, and the block is still logging.
                self._snapshot = (self._fed, self._build(self._reader.snapshot(), None))
            return self._snapshot[1]

    @property
    def functions(self) -> tuple[FunctionSummary, ...]:
        """Summaries of the compiled functions counted (all, or those named in ``functions=``)."""
        return tuple(f for f in self.run.functions if self.only is None or f.name in self.only)

    @property
    def recompiles(self) -> int:
        """Compiles in the block with compile number > 0: recompiles of frames first compiled inside or before it.
        When the log lost records (see :attr:`lost_log`), torch's own count."""
        logged = sum(function_recompiles(f) for f in self.functions)
        if self.lost_log:
            return max(logged, sum(1 for r in self._torch_records() if _compile_number(r) > 0))
        return logged

    @property
    def compiles(self) -> int:
        """Every compile that happened inside the block (first compiles and recompiles, attempts that
        failed included). When the log lost records (see :attr:`lost_log`), torch's own count."""
        logged = self._logged_compiles()
        torch_count = self.torch_compiles
        return max(logged, torch_count) if torch_count is not None else logged

    @property
    def torch_compiles(self) -> int | None:
        """Compile attempts torch itself recorded in the block (None where this torch keeps no record)."""
        return len(self._torch_records()) if self._recorded else None

    @property
    def lost_log(self) -> bool:
        """torch compiled more in the block than its log showed the watch: the code changed torch's
        logging under it (``torch._logging.set_logs``, ``logging.disable``), so causes are missing
        and the counts are torch's own."""
        return lost_lines(self.torch_compiles, self._logged_compiles())

    def _logged_compiles(self) -> int:
        """The compiles the log showed the watch in the block: first compiles seen inside it, and recompiles."""
        first = sum(1 for f in self.functions for frame_id in f.frame_ids if frame_id in self._first_compiled)
        return first + sum(function_recompiles(f) for f in self.functions)

    def warnings(self) -> list[str]:
        """What the counts cannot show by themselves, one line each (the log lost records under the watch)."""
        return watch_warnings(self)

    def _torch_records(self) -> list[dict]:
        # A record without a compile id is guarddiag's own (a call a stance refused), not a compile.
        return [
            r
            for r in list(self._records)
            if "compile_id" in r and r.get("name") is not None and (self.only is None or r["name"] in self.only)
        ]

    @property
    def limit_hits(self) -> int:
        """How often torch hit a recompile limit and gave up compiling a function."""
        return sum(len(f.limit_hits) for f in self.functions)

    @property
    def graph_breaks(self) -> int:
        """Graph breaks logged inside the block."""
        return sum(len(f.graph_breaks) for f in self.functions)

    @property
    def causes(self) -> list[Cause]:
        """Every cause of every recompile in the block, in log order (torch lists the newest cache entry first)."""
        return [cause for f in self.functions for event in f.recompile_events for cause in event.causes]

    def report(self) -> str:
        """Plain text: totals, then each function with recompiles or limit hits and its grouped causes."""
        return watch_report(self)


def function_recompiles(f: FunctionSummary) -> int:
    """Recompiles of ``f`` that were in the captured log (its compiles before a watch began are not)."""
    return len(f.recompile_events)


def _compile_number(record: dict) -> int:
    """``3/2`` -> 2 (``3/2_1`` too); 0 when the id cannot be read."""
    cid = CompileId.parse(str(record.get("compile_id", "")))
    return cid.number if cid is not None and cid.number >= 0 else 0


def _process_hooks() -> Any:
    """The ledger module; under `guarddiag run` the bootstrap has loaded it already, under that name."""
    loaded = sys.modules.get("_guarddiag_process")
    if loaded is not None:
        return loaded
    from guarddiag.child._site import _guarddiag_process

    return _guarddiag_process


def _torch_version() -> str | None:
    import torch

    return str(torch.__version__)


def watch(functions: Iterable[str] | None = None) -> Watch:
    """A context manager counting torch.compile compiles and recompiles inside its block; see :class:`Watch`."""
    return Watch(functions)
