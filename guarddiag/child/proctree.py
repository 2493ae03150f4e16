"""The processes of a run: waiting for the child, watching what it starts, and stopping it all.

Linux /proc tells the tree below a child. guarddiag is a child subreaper: a daemon the script
double-forks is re-parented to it. While runs are live, one thread samples the tree of each every
``SAMPLE_S`` seconds and keeps each Python process it sees (a Sighting): the runner names those in
which guarddiag's start-up hook did not run, and the orphans adopted by guarddiag are known by the
run they were seen in.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from guarddiag.child._site import _guarddiag_process as _process
from guarddiag.errors import Interrupted

# Importing torch alone takes over a second: a process that compiles is sampled several times.
SAMPLE_S = 0.25
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*[a-z]?$")
# torch's extension module: mapped by a process that imported torch, not by one that only loads a
# library linked to libtorch (inductor's `python -c "cdll.LoadLibrary(kernel.so)"` checks).
_TORCH_MODULE = b"/torch/_C."


@dataclass
class Sighting:
    """A Python process seen in a run: its pid, its command line (``/proc/PID/cmdline``, NUL-ended
    arguments), guarddiag's variables in the environment it was started with, and whether it loaded torch."""

    pid: int
    cmdline: bytes
    run_mark: str | None
    pythonpath: str | None
    torch: bool = False

    @property
    def argv(self) -> list[str]:
        return [os.fsdecode(a) for a in self.cmdline.split(b"\0")[:-1]] if self.cmdline.endswith(b"\0") else [os.fsdecode(self.cmdline)]


@dataclass
class RunProcesses:
    """A live run: its child, its run folder, when the child started (clock ticks after boot, as
    /proc/PID/stat says) and the Python processes seen in it, by (pid, start, command line)."""

    child: subprocess.Popen
    run_dir: str
    start: int
    seen: dict[tuple[int, int, bytes], Sighting] = field(default_factory=dict)
    # Every process seen in the run, as (pid, start): an orphan is known by it once its parent exits.
    members: set[tuple[int, int]] = field(default_factory=set)


# Children running now (compare and check run several from threads), for stopping them all on Ctrl-C.
_LIVE: dict[int, RunProcesses] = {}
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()
_WAKE = threading.Event()
_SAMPLER: list[threading.Thread] = []
_SAMPLING = threading.Lock()


@contextlib.contextmanager
def tracked(child: subprocess.Popen, run_dir: str) -> Iterator[RunProcesses]:
    """While the block runs, ``child`` (of run folder ``run_dir``) is sampled, and among the runs
    stop_all_live stops; the value holds the Python processes seen in it."""
    run = RunProcesses(child, run_dir, _start_time(child.pid) or 0)
    with _LIVE_LOCK:
        _LIVE[child.pid] = run
        if not _SAMPLER:
            _start_watcher()
            _SAMPLER.append(threading.Thread(target=_sample_forever, name="guarddiag-sampler", daemon=True))
            _SAMPLER[0].start()
    _watch("+", {(child.pid, run.start)})
    _WAKE.set()
    try:
        yield run
    finally:
        _sample()  # the last look, at what the run left running
        with _SAMPLING, _LIVE_LOCK:  # no sample writes to ``run`` once this returns
            _LIVE.pop(child.pid, None)
        # The run is over (and stopped, if it was): what it left running now outlives it, as before.
        _watch("-", run.members | {(child.pid, run.start)})


# Runs in a session of its own (a Ctrl-C at the terminal, a kill of guarddiag's process group miss it),
# reading "+ PID START" / "- PID START" lines: at end of input without the last "-" lines guarddiag
# died (SIGKILL, OOM) and left runs behind: it kills each of their processes it was told of that
# still runs (the same start time: not a new process that took the pid).
_WATCHER_CODE = """
import os, signal, sys
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(sig, signal.SIG_IGN)
live = set()
for line in sys.stdin:
    op, pid, start = line.split()
    (live.add if op == "+" else live.discard)((int(pid), start))
for pid, start in live:
    try:
        with open("/proc/%d/stat" % pid) as fh:
            if fh.read().rpartition(")")[2].split()[19] == start:
                os.kill(pid, signal.SIGKILL)
    except (OSError, IndexError):
        pass
"""
_WATCHER: list[subprocess.Popen] = []
_WATCH_LOCK = threading.Lock()  # the sampler and the runs' threads write to it


def _start_watcher() -> None:
    """The processes of the runs die even when guarddiag is killed with SIGKILL: PR_SET_PDEATHSIG
    reaches only the script, and its death re-parents what it started to init."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):
        watcher = subprocess.Popen(
            [sys.executable, "-S", "-c", _WATCHER_CODE], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, text=True,
        )
        _OWN.add(watcher.pid)
        _WATCHER.append(watcher)


def _watch(op: str, members: set[tuple[int, int]]) -> None:
    if not _WATCHER or not members:
        return
    with _WATCH_LOCK, contextlib.suppress(OSError, ValueError):  # the watcher is gone: nothing to tell it
        _WATCHER[0].stdin.write("".join(f"{op} {pid} {start}\n" for pid, start in members))
        _WATCHER[0].stdin.flush()


def stopped() -> None:
    """The runs stop_all_live stopped have all returned: later runs of this process are not interrupted."""
    _STOPPING.clear()


def stop_all_live(grace: float = 10) -> None:
    """Stop every running child and what it started (see _stop); KILL at once on a second Ctrl-C."""
    _STOPPING.set()
    with _LIVE_LOCK:
        children = [run.child for run in _LIVE.values()]
    trees = {proc: _tree(proc) for proc in children}
    try:
        _stop(trees, signal.SIGINT, grace)
    except KeyboardInterrupt:
        _kill(trees)




def wait(proc: subprocess.Popen, timeout: float | None) -> tuple[str, int]:
    """Wait for the child; on timeout stop it (TERM, then KILL); on Ctrl-C let it stop, on a second Ctrl-C kill it."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop({proc: _tree(proc)}, signal.SIGTERM, grace=5)
        return "timeout", proc.returncode
    except KeyboardInterrupt:
        # The terminal sent SIGINT to the child too; give it a moment to finish writing its log.
        trees = {proc: _tree(proc)}
        try:
            _stop(trees, signal.SIGINT, grace=10)
        except KeyboardInterrupt:
            _kill(trees)
            raise Interrupted(proc.returncode) from None
        return "interrupted", proc.returncode
    if _STOPPING.is_set():
        return "interrupted", code  # stopped by guarddiag on Ctrl-C (see execute_many)
    if code < 0:
        return "killed", code
    return ("ok" if code == 0 else "failed"), code


def _stop(trees: dict[subprocess.Popen, list[int]], sig: int, grace: float) -> None:
    """Signal each child and every process it started (``trees``: child -> descendants, read before
    any signal), wait up to ``grace`` seconds, then kill what is left: nothing a script started
    outlives its run. SIGINT first (a script's KeyboardInterrupt handlers run), SIGTERM halfway: a
    process started with SIGINT ignored (a shell's background job, some CI runners) still stops."""
    stages = [(sig, grace / 2), (signal.SIGTERM, grace / 2)] if sig != signal.SIGTERM else [(sig, grace)]
    # Ctrl-C at a terminal already reached every process of our process group: a second SIGINT would
    # interrupt the script's own KeyboardInterrupt handling (saving a checkpoint). Only the processes
    # that left the group (a new session, a job of their own) are sent it.
    already = os.getpgrp() if sig == signal.SIGINT and _terminal_interrupt() else None
    for stage, (stage_sig, wait_s) in enumerate(stages):
        skip = already if stage == 0 else None
        for proc, tree in trees.items():
            if proc.poll() is None and not _in_group(proc.pid, skip):
                proc.send_signal(stage_sig)
            _signal_all([pid for pid in tree if _alive(pid) and not _in_group(pid, skip)], stage_sig)
        end = time.monotonic() + wait_s
        while time.monotonic() < end and any(proc.poll() is None for proc in trees):
            time.sleep(0.05)
    _kill(trees, settle=min(grace, 2.0))


def _tree(proc: subprocess.Popen) -> list[int]:
    """Every process the run started: those below the child, and the orphans guarddiag (a child
    subreaper) adopted that belong to the run (see _owners)."""
    table = _table()
    children = _children_of(table)
    found = _below(proc.pid, children)
    found += [pid for pid in _orphans(table, children) if proc.pid in _owners(pid, table)]
    return list(dict.fromkeys(found))


def _owners(pid: int, table: dict[int, tuple[int, int]]) -> set[int]:
    """The live runs (child pids) an orphan adopted by guarddiag belongs to: the run it was seen in;
    else the run named by the run folder in its environment; else (its parent exited before a sample
    saw it, and it dropped its environment) every run live when it started: an orphan is never
    left running, and with runs in parallel it goes with the first of them to stop."""
    key = (pid, table[pid][1]) if pid in table else None
    with _LIVE_LOCK:
        runs = list(_LIVE.values())
    owners = {run.child.pid for run in runs if key in run.members}
    if owners:
        return owners
    environ = _environ(pid)
    owners = {run.child.pid for run in runs if environ.get(_process.RUN_MARK) == run.run_dir}
    if owners:
        return owners
    return {run.child.pid for run in runs if key is not None and run.start <= key[1]}


def _orphans(table: dict[int, tuple[int, int]], children: dict[int, list[int]]) -> list[int]:
    """The processes below guarddiag that it did not start as a run's child, with their descendants."""
    with _LIVE_LOCK:
        runs = set(_LIVE)
    found = []
    for pid in children.get(os.getpid(), ()):
        if pid not in runs and pid not in _OWN:
            found += [pid, *_below(pid, children)]
    return found


# Processes guarddiag starts for itself while runs are live, never taken for a run's orphans.
_OWN: set[int] = set()


def _sample_forever() -> None:
    while True:
        _WAKE.wait()
        with contextlib.suppress(Exception):  # a sample is best effort; a run never fails for it
            _sample()
        with _LIVE_LOCK:
            if not _LIVE:
                _WAKE.clear()
        time.sleep(SAMPLE_S)


def _sample() -> None:
    """One look at each live run's processes: each Python one is kept with its command line (a
    process that execs another program is seen again under its new one)."""
    with _SAMPLING:
        _sample_locked()


def _sample_locked() -> None:
    table = _table()
    children = _children_of(table)
    with _LIVE_LOCK:
        runs = dict(_LIVE)
    members: dict[int, list[int]] = {pid: [pid, *_below(pid, children)] for pid in runs if pid in table}
    for orphan in _orphans(table, children):
        for owner in _owners(orphan, table):
            members.setdefault(owner, []).append(orphan)
    for owner, pids in members.items():
        run = runs.get(owner)
        if run is None:
            continue
        new = {(pid, table[pid][1]) for pid in pids if pid in table} - run.members
        run.members |= new
        _watch("+", new)
        for pid in pids:
            if pid in table:
                _look(run, pid, table[pid][1])


def _look(run: RunProcesses, pid: int, start: int) -> None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return
    key = (pid, start, cmdline)
    sighting = run.seen.get(key)
    if sighting is None:
        if not cmdline or not _is_python(pid, cmdline):
            return
        environ = _environ(pid)
        sighting = run.seen[key] = Sighting(pid, cmdline, environ.get(_process.RUN_MARK), environ.get("PYTHONPATH"))
    if not sighting.torch:
        sighting.torch = _maps_torch(pid)


def _is_python(pid: int, cmdline: bytes) -> bool:
    """A Python interpreter by the program the process runs (``/proc/PID/exe``; else its argv[0])."""
    try:
        program = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        program = os.fsdecode(cmdline.split(b"\0")[0])
    return bool(_PYTHON.match(os.path.basename(program)))


def _maps_torch(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            maps = fh.read()
    except OSError:
        return False
    return _TORCH_MODULE in maps


def _environ(pid: int) -> dict[str, str]:
    """The environment a process was started with (/proc/PID/environ: later changes do not show)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            entries = fh.read().split(b"\0")
    except OSError:
        return {}
    return dict(os.fsdecode(e).partition("=")[::2] for e in entries if b"=" in e)


def become_subreaper() -> None:
    """Orphans of the processes guarddiag starts are re-parented to guarddiag instead of init (Linux
    PR_SET_CHILD_SUBREAPER), so that a daemon a script double-forks can still be found and stopped."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _terminal_interrupt() -> bool:
    """Whether a SIGINT to guarddiag came from its terminal: guarddiag is in the terminal's foreground
    process group, to which the terminal sends Ctrl-C (shells run a pipeline's processes there)."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return True
        except OSError:
            continue
    return False


def _in_group(pid: int, group: int | None) -> bool:
    if group is None:
        return False
    try:
        return os.getpgid(pid) == group
    except OSError:
        return False


def _kill(trees: dict[subprocess.Popen, list[int]], settle: float = 0.0) -> None:
    """KILL the children still running, then, after up to ``settle`` seconds, their descendants."""
    for proc in trees:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = [pid for tree in trees.values() for pid in tree]
    end = time.monotonic() + settle
    while left and time.monotonic() < end:
        left = [pid for pid in left if _alive(pid)]
        time.sleep(0.05)
    _signal_all([pid for pid in left if _alive(pid)], signal.SIGKILL)


def _table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, start time) of every process, read from /proc (Linux); empty without /proc."""
    table: dict[int, tuple[int, int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 19:
            table[int(entry)] = (int(fields[1]), int(fields[19]))
    return table


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def _children_of(table: dict[int, tuple[int, int]]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    return children


def _below(pid: int, children: dict[int, list[int]]) -> list[int]:
    """Every process below ``pid``. Taken before the child is signalled: once it exits, its children
    are re-parented (to guarddiag, a subreaper: then they are orphans of the run)."""
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"  # a zombie waits for its new parent to reap it
