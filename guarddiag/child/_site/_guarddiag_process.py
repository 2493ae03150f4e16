"""What guarddiag installs in every process of a run: torch's own record of each compile (the ledger),
torch's log handlers kept on a file of the run (``route_log_setups``, ``AfterImport``), and a log
file of its own for each forked process.

The ledger: torch's own record of every compile, taken as torch makes it: the count the log is checked against.

torch appends one ``CompilationMetrics`` per compile attempt to a deque in ``torch._dynamo.utils``
(64 entries by default, kept across ``torch._dynamo.reset()``, whose compile ids restart). Reading
that deque when the script ends loses entries past 64 and cannot tell a reused compile id from a
new compile; so the deque is replaced, once ``torch._dynamo.utils`` loads, by one that also hands
each record to the sinks registered here. Standard library only: it runs inside the script's
processes (the bootstrap, spawned children through ``child/_site``), and in-process for
``guarddiag.watch()``. It never imports torch itself.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.machinery
import json
import logging
import os
import sys
from collections.abc import Callable

MODULE = "torch._dynamo.utils"
# A record is a dict: compile_id, name, file, line (None for an attempt refused at the recompile
# limit, which torch records without a code object), fail_type, reason (first line, capped),
# compile_s (seconds Dynamo spent on the attempt, backend included; None when torch did not time
# it), recompile_limit (torch._dynamo.config's value when the record was made; None: unknown) and
# caller (the file of the code that called the compiled function; None: not found), and torch's own
# recompile_reason, guard_count, guard_latency_us, cache_size, accumulated_cache_size, user_contexts
# (recompile_user_contexts) and graph_breaks (num_graph_breaks): None where this torch has none.
# Records without a compile_id are guarddiag's own (emit): a sink that wants compiles skips them.
Sink = Callable[[dict], None]
_SINKS: list[Sink] = []
_REASON_CHARS = 300
# torch's recompile_reason holds the guard, its source line and (torch >= 2.11) the user stack under it.
# The same figure as guarddiag.ledger.RECOMPILE_REASON_CHARS (a trace's reason is cut there too).
_RECOMPILE_REASON_CHARS = 4000


def add_sink(sink: Sink) -> bool:
    """Hand every later compile record to ``sink``; False when this torch keeps no records to hook
    (before 2.2), or when torch._dynamo.utils is loaded and its deque could not be wrapped."""
    _SINKS.append(sink)
    utils = sys.modules.get(MODULE)
    if utils is None:
        if not any(isinstance(f, AfterImport) and f.name == MODULE for f in sys.meta_path):
            sys.meta_path.insert(0, AfterImport(MODULE, _install))
        return True
    return _install(utils)


def emit(record: dict) -> None:
    """Hand a record of guarddiag's own (not a compile: ``_guarddiag_stance``'s refused calls) to the sinks."""
    for sink in list(_SINKS):
        with contextlib.suppress(Exception):  # a diagnostic never breaks the user's script
            sink(record)


def remove_sink(sink: Sink) -> None:
    """Stop handing records to ``sink`` (the wrapped deque stays: it only forwards)."""
    if sink in _SINKS:
        _SINKS.remove(sink)


def installed() -> bool:
    """Whether torch's records currently pass through here (a script may replace the deque)."""
    utils = sys.modules.get(MODULE)
    return utils is not None and isinstance(getattr(utils, "_compilation_metrics", None), _Ledger)


def record_of(metrics: object) -> dict:
    """The fields guarddiag reads from one CompilationMetrics."""
    reason = getattr(metrics, "fail_reason", None)
    return {
        "compile_id": str(getattr(metrics, "compile_id", "") or ""),
        "name": getattr(metrics, "co_name", None),
        "file": getattr(metrics, "co_filename", None),
        "line": getattr(metrics, "co_firstlineno", None),
        "fail_type": getattr(metrics, "fail_type", None),
        "reason": str(reason).strip().splitlines()[0][:_REASON_CHARS] if reason else "",
        "compile_s": _compile_seconds(metrics),
        "recompile_limit": _recompile_limit(),
        "caller": _caller(),
        "recompile_reason": _capped(getattr(metrics, "recompile_reason", None)),
        "guard_count": getattr(metrics, "guard_count", None),
        "guard_latency_us": getattr(metrics, "guard_latency_us", None),
        "cache_size": getattr(metrics, "cache_size", None),
        "accumulated_cache_size": getattr(metrics, "accumulated_cache_size", None),
        "user_contexts": _contexts(getattr(metrics, "recompile_user_contexts", None)),
        "graph_breaks": getattr(metrics, "num_graph_breaks", None),
    }


def _capped(text: object) -> str | None:
    """torch's recompile reason, cut where a reason with a long user stack would swell the ledger."""
    return str(text)[:_RECOMPILE_REASON_CHARS] if text else None


def _contexts(contexts: object) -> list[str] | None:
    """torch's set of user contexts (each already cut to 256 characters), in a stable order."""
    return sorted(str(c) for c in contexts) if isinstance(contexts, (set, frozenset, list, tuple)) else None


# Code that is not the caller of a compiled function: guarddiag's own hooks here, and the standard library
# (contextlib's decorators, runpy) between torch's frames and the code that made the call.
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__)) + os.sep


def _caller() -> str | None:
    """The file of the code that called the function being compiled: torch records its metrics while the
    call waits, so past torch's own frames (and whatever wraps its record deque in between, a script's own
    subclass), the first frame that is neither torch's, the standard library's nor guarddiag's is the caller
    (a library that calls it, as generate() does, or the user's script)."""
    torch = sys.modules.get("torch")
    torch_file = getattr(torch, "__file__", None)
    if not torch_file:
        return None
    torch_dir = os.path.dirname(os.path.abspath(torch_file)) + os.sep
    frame = sys._getframe(1)
    in_torch = False
    while frame is not None:
        file = frame.f_code.co_filename
        path = os.path.abspath(file) if not file.startswith("<") else file
        if path.startswith(torch_dir):
            in_torch = True
        elif in_torch and not (
            path.startswith(_OWN_DIR) or file.startswith("<frozen ") or (path.startswith(_STDLIB_DIR) and "-packages" + os.sep not in path)
        ):
            return file
        frame = frame.f_back
    return None


def _compile_seconds(metrics: object) -> float | None:
    """``entire_frame_compile_time_s`` (torch 2.1+: the whole frame, backend included); torch 2.2-2.4
    leave it None for an attempt that installed no code and put that attempt's time in
    ``dynamo_time_before_restart_s`` ("if compilation failed, the entire time is wasted")."""
    seconds = getattr(metrics, "entire_frame_compile_time_s", None)
    if seconds is None and getattr(metrics, "has_guarded_code", None) is False:
        seconds = getattr(metrics, "dynamo_time_before_restart_s", None)
    return round(seconds, 6) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None


def _recompile_limit() -> int | None:
    """torch's recompile limit in force now: ``recompile_limit`` (2.6+), ``cache_size_limit`` before."""
    config = sys.modules.get("torch._dynamo.config")
    for name in ("recompile_limit", "cache_size_limit"):
        try:
            value = getattr(config, name)
        except Exception:  # noqa: BLE001 - a missing name, or a deprecation warning made an error
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class _Ledger(collections.deque):
    """torch's deque of compilation metrics, forwarding each record as it is appended."""

    def append(self, metrics: object) -> None:
        if _SINKS:
            record = record_of(metrics)
            for sink in list(_SINKS):
                with contextlib.suppress(Exception):  # a cross-check never breaks the user's compile
                    sink(record)
        super().append(metrics)


def _install(utils: object) -> bool:
    current = getattr(utils, "_compilation_metrics", None)
    if isinstance(current, _Ledger):
        return True
    if not isinstance(current, collections.deque):
        return False
    utils._compilation_metrics = _Ledger(current, maxlen=current.maxlen)  # type: ignore[attr-defined]
    for sink in _SINKS:
        # A file sink's file now says the records are hooked, so that a process that compiles nothing
        # (a rank that only waits) reads as 0 compiles, not as not known.
        hooked = getattr(sink, "hooked", None)
        if hooked is not None:
            hooked()
    resize = getattr(utils, "set_compilation_metrics_limit", None)
    if resize is not None and not getattr(resize, "_guarddiag", False):

        def set_compilation_metrics_limit(new_size: int) -> None:
            resize(new_size)
            _install(utils)  # torch builds a new deque: wrap that one too

        set_compilation_metrics_limit._guarddiag = True  # type: ignore[attr-defined]
        utils.set_compilation_metrics_limit = set_compilation_metrics_limit  # type: ignore[attr-defined]
    return True


def when_imported(name: str, patch: Callable[[object], object]) -> None:
    """Run ``patch(module)`` on module ``name``: now when it is loaded, else right after it loads. Patches
    of one module share one finder: the first finder of a name takes its import, and a second would never run."""
    module = sys.modules.get(name)
    if module is not None:
        patch(module)
        return
    waiting = next((f for f in sys.meta_path if isinstance(f, AfterImport) and f.name == name), None)
    if waiting is not None:
        waiting.patches.append(patch)
    else:
        sys.meta_path.insert(0, AfterImport(name, patch))


class AfterImport:
    """A meta path finder that runs its patches on module ``name`` right after it is executed, before
    anything uses it; it leaves the meta path at the first import of that name."""

    def __init__(self, name: str, patch: Callable[[object], object]) -> None:
        self.name = name
        self.patches = [patch]

    def find_spec(self, fullname: str, path=None, target=None):  # noqa: ANN001 - the meta path protocol
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module) -> None:  # noqa: ANN001
            exec_module(module)
            for patch in self.patches:
                patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


@contextlib.contextmanager
def stderr_to(stream: object):
    """torch's log handlers bind ``sys.stderr`` when created: create them while it is ``stream``."""
    saved = sys.stderr
    sys.stderr = stream
    try:
        yield
    finally:
        sys.stderr = saved


def route_log_setups(internal: object, stream_for: Callable[[], object]) -> None:
    """Every later handler set-up of ``torch._logging._internal`` (torch's own at import, a script's
    ``torch._logging.set_logs``) binds the stream ``stream_for()`` returns (None: torch's stderr)."""
    original = getattr(internal, "_init_logs", None)
    if original is None:
        return

    def _init_logs(*args, **kwargs):
        stream = stream_for()
        if stream is None:
            return original(*args, **kwargs)
        with stderr_to(stream):
            return original(*args, **kwargs)

    internal._init_logs = _init_logs  # type: ignore[attr-defined]


class FileSink:
    """Writes records as JSON lines, one file per process: a forked child writes its own file.

    ``main_path`` is the file of the process that created the sink; any other process (a fork)
    writes ``<folder>/torch.child-<pid>.compiles.jsonl``, beside its ``torch.child-<pid>.log``.
    Each file starts with ``{"ledger": 1}``; with ``eager`` the main file is created at once, so
    that its existence says the records were hooked even when nothing compiles."""

    def __init__(self, main_path: str, eager: bool = False) -> None:
        self._main_pid = os.getpid()
        self._main_path = main_path
        self._pid = -1
        self._fh = None
        if eager:
            self._open()

    def _open(self):  # noqa: ANN202
        pid = os.getpid()
        if pid != self._pid:
            path = self._main_path if pid == self._main_pid else child_ledger_path(os.path.dirname(self._main_path), pid)
            self._fh = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the process
            self._pid = pid
            self._fh.write('{"ledger": 1}\n')
        return self._fh

    def hooked(self) -> None:
        """torch's records are hooked in this process: create its file (no record yet)."""
        with contextlib.suppress(OSError):  # the script removed the run folder: its records are lost either way
            self._open()

    def __call__(self, record: dict) -> None:
        self._open().write(json.dumps(record) + "\n")


def ledger_at_exit(sink: FileSink) -> None:
    """At exit, a process that imported torch but never loaded ``torch._dynamo.utils`` compiled
    nothing (no compile runs without it): its file is created then (no record), so that a rank that
    never called torch.compile reads as 0 compiles, not as not known. A process without torch gets none."""
    import atexit

    def at_exit() -> None:
        if "torch" in sys.modules and MODULE not in sys.modules:
            sink.hooked()

    atexit.register(at_exit)


def child_ledger_path(folder: str, pid: int) -> str:
    return os.path.join(folder, f"torch.child-{pid}.compiles.jsonl")


def route_forks(folder: str, stream: object) -> None:
    """After a fork, the child's torch log handlers move from its parent's file to
    ``<folder>/torch.child-<pid>.log``: compile ids of a forked child continue its parent's, and in
    one file they would collide. A fork of a fork moves off its own parent's file the same way."""
    current = [stream]

    def after_fork_in_child() -> None:
        own = open(os.path.join(folder, f"torch.child-{os.getpid()}.log"), "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
            for handler in getattr(logger, "handlers", ()):
                if isinstance(handler, logging.StreamHandler) and handler.stream is current[0]:
                    handler.setStream(own)
        current[0] = own

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=after_fork_in_child)


# The environment variable that marks a process of a run (set by the bootstrap for everything it starts).
RUN_MARK = "GUARDDIAG_CHILD_LOG_DIR"
# Each process where guarddiag's hooks run writes ``<run folder>/observed/<pid>`` holding its command line
# (as /proc/PID/cmdline shows it): guarddiag samples the run's processes, and a Python process with no
# such file for its command line ran unobserved (proctree, runner).
OBSERVED_DIR = "observed"
# What torchrun (torch.distributed.elastic) tells each worker it starts, kept beside the worker's log.
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT")
# Set by the process that took its rank variables as its own (rank_identity): the processes it starts
# inherit them unchanged, and are not that rank; a launcher below it gives its workers new ones.
RANK_TAKEN = "GUARDDIAG_RANK_TAKEN"


def rank_identity() -> str:
    """The rank variables of this process's environment, as one string."""
    return json.dumps([os.environ.get(name) for name in RANK_VARIABLES])


def rank_path(folder: str, pid: int) -> str:
    return os.path.join(folder, f"torch.child-{pid}.rank.json")


def note_rank(folder: str) -> None:
    """A torchrun worker writes who it is (``RANK`` and the rest of RANK_VARIABLES, its host) to
    ``<folder>/torch.child-<pid>.rank.json``. A process that inherited RANK from a worker (a
    DataLoader worker inside rank 1) is not that rank: the worker marks its environment (RANK_TAKEN)
    with its rank variables, which such a process inherits unchanged."""
    if "RANK" not in os.environ or os.environ.get(RANK_TAKEN) == rank_identity():
        return
    os.environ[RANK_TAKEN] = rank_identity()
    import socket

    fact = {name: os.environ.get(name) for name in RANK_VARIABLES}
    fact["host"] = socket.gethostname()
    try:
        with open(rank_path(folder, os.getpid()), "w", encoding="utf-8") as fh:
            json.dump(fact, fh)
    except OSError:
        pass  # the script removed its run folder: the process is reported as a child


def note_observed(folder: str) -> None:
    """Say that this process runs with guarddiag's hooks, and so will the processes it forks (their
    command line is this one's; one that then execs another program writes none unless hooked again)."""

    def note() -> None:
        try:
            with open("/proc/self/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            cmdline = "\0".join(getattr(sys, "orig_argv", sys.argv)).encode() + b"\0"
        with contextlib.suppress(OSError):  # the script removed its run folder
            os.makedirs(os.path.join(folder, OBSERVED_DIR), exist_ok=True)
            with open(os.path.join(folder, OBSERVED_DIR, str(os.getpid())), "wb") as fh:
                fh.write(cmdline)

    note()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=note)
