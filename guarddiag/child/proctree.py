"""The processes of a run: waiting for the child, and stopping it with everything it started.

Linux /proc tells the tree below a child; guarddiag is a child subreaper, so a daemon the script
double-forks is re-parented to it and found by the run folder in its environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from guarddiag.child._site import _guarddiag_process as _process
from guarddiag.errors import Interrupted

# Children running now (compare and check run several from threads), for stopping them all on Ctrl-C,
# and the run folder of each (child pid -> folder), which every process of that run has in its environment.
_LIVE: set[subprocess.Popen] = set()
_RUN_DIRS: dict[int, str] = {}
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


@contextlib.contextmanager
def tracked(child: subprocess.Popen, run_dir: str) -> Iterator[None]:
    """While the block runs, ``child`` (of run folder ``run_dir``) is among the runs stop_all_live stops."""
    with _LIVE_LOCK:
        _LIVE.add(child)
        _RUN_DIRS[child.pid] = run_dir
    try:
        yield
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(child)
            _RUN_DIRS.pop(child.pid, None)


def stopped() -> None:
    """The runs stop_all_live stopped have all returned: later runs of this process are not interrupted."""
    _STOPPING.clear()


def stop_all_live(grace: float = 10) -> None:
    """Stop every running child and what it started (see _stop); KILL at once on a second Ctrl-C."""
    _STOPPING.set()
    with _LIVE_LOCK:
        children = list(_LIVE)
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
    """Every process the run started: those below the child, and those whose parent exited (a
    double-forked daemon) and that guarddiag, a child subreaper, adopted: known by their run folder."""
    found = _descendants(proc.pid)
    run_dir = _RUN_DIRS.get(proc.pid)
    if run_dir:
        mark = f"{_process.RUN_MARK}={run_dir}".encode()
        found += [pid for pid in _descendants(os.getpid()) if pid != proc.pid and pid not in found and _has_env(pid, mark)]
    return found


def _has_env(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return entry in fh.read().split(b"\0")
    except OSError:
        return False


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


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc (Linux); empty where there is no /proc.

    Taken before the child is signalled: once it exits, its children are re-parented and lost."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
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
        if len(fields) > 1:
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), ()):
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
