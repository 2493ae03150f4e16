"""Start the user's script in a child interpreter with torch logging on, and read its log.

The child runs ``_bootstrap.py`` by path (guarddiag need not be installed in the target
environment). Its stdin, stdout and stderr are the user's; torch's log lines go to a
file under ``.guarddiag/runs/<id>/`` that stays on disk whatever happens.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from guarddiag import _bootstrap
from guarddiag._childsite import _guarddiag_process as _process
from guarddiag.build import build_from_lines
from guarddiag.errors import InputError, Interrupted
from guarddiag.ledger import compiles_in, read_ledger
from guarddiag.merge import add_stats, in_process
from guarddiag.model import FunctionSummary, ParseStats, Run
from guarddiag.store import save_run

# Log channels guarddiag needs; `dynamo` at INFO names the frame behind each compile id.
REQUIRED_LOGS = ("dynamo", "guards", "recompiles", "graph_breaks")
_FLAG_SYNTAX = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)=(?P<value>.*)$")


def merge_torch_logs(existing: str | None) -> str:
    """Add guarddiag's channels to a user's ``TORCH_LOGS``, keeping theirs (``+dynamo`` covers ``dynamo``);
    a channel of guarddiag's that the user turned down (``-dynamo``: errors only) is turned up again,
    or the log would not name the functions."""
    items = [s.strip() for s in (existing or "").split(",") if s.strip()]
    items = [s for s in items if not (s.startswith("-") and s[1:] in REQUIRED_LOGS)]
    have = {s.lstrip("+-") for s in items}
    items.extend(name for name in REQUIRED_LOGS if name not in have)
    return ",".join(items)


def _without_outer_run(env: dict[str, str]) -> dict[str, str]:
    """guarddiag run inside a script that guarddiag runs: its child belongs to this run, not the
    outer one, whose variables it inherited (they would send its torch log to the outer run folder)."""
    env = dict(env)
    env.pop(_process.RUN_MARK, None)
    site = os.path.join(os.path.dirname(os.path.abspath(_bootstrap.__file__)), "_childsite")
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != site]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    else:
        env.pop("PYTHONPATH", None)
    return env


def parse_flag(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> (name, value); the value is checked against torch's config in the child."""
    m = _FLAG_SYNTAX.match(text)
    if m is None:
        raise InputError(f"--flag '{text}': expected NAME=VALUE, e.g. --flag automatic_dynamic_shapes=false")
    return m["name"], m["value"]


@dataclass(frozen=True)
class RunRequest:
    """What to run and how."""

    script: Path
    args: tuple[str, ...] = ()
    python: str = sys.executable
    flags: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None
    workdir: Path = field(default_factory=lambda: Path(".guarddiag"))
    # Parallel runs (compare) keep the script's output in the run folder instead of the terminal.
    capture_output: bool = False
    label: str = ""
    env: tuple[tuple[str, str], ...] = ()


def check_script(script: Path) -> None:
    if not script.exists():
        raise InputError(f"{script}: no such script; give the path of a Python file to run")
    if script.is_dir():
        raise InputError(f"{script}: is a directory; give the path of a Python file to run")


def _check_python(python: str) -> str:
    found = shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)
    if not found:
        raise InputError(f"--python {python}: no such interpreter; give the path of a Python that has torch installed")
    if not os.path.isfile(found):
        raise InputError(f"--python {python}: is a directory, not an interpreter; give the path of a Python that has torch installed")
    return found


# Finished run folders kept under .guarddiag/runs (the newest); GUARDDIAG_KEEP_RUNS=0 keeps them all.
KEEP_RUNS = 20
# A folder without a record (a run still going, or one that crashed) is left alone this long.
_UNFINISHED_GRACE_S = 24 * 3600


def keep_runs() -> int:
    """How many finished run folders to keep: GUARDDIAG_KEEP_RUNS, else KEEP_RUNS."""
    raw = os.environ.get("GUARDDIAG_KEEP_RUNS", "")
    if not raw:
        return KEEP_RUNS
    if not raw.isdigit():
        raise InputError(f"GUARDDIAG_KEEP_RUNS={raw!r}: not a whole number; give how many run folders to keep (0: all)")
    return int(raw)


def prune_runs(runs: Path, keep: int, now: float | None = None) -> list[Path]:
    """Remove all but the ``keep`` newest finished run folders (those with a run.json) under ``runs``,
    and unfinished ones older than a day; ``keep`` 0 removes nothing. Returns what was removed."""
    if keep <= 0 or not runs.is_dir():
        return []
    now = time.time() if now is None else now
    finished, stale = [], []
    for folder in runs.iterdir():
        try:
            if folder.is_symlink() or not folder.is_dir():
                continue
            record = folder / "run.json"
            if record.is_file():
                finished.append((record.stat().st_mtime, folder))
            elif now - folder.stat().st_mtime > _UNFINISHED_GRACE_S:
                stale.append(folder)
        except OSError:
            continue
    finished.sort(reverse=True)
    removed = [folder for _, folder in finished[keep:]] + stale
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


_MAX_STEM_BYTES = 100
# Run folders this process created (an interrupted command says they are kept only when there are some).
RUN_FOLDERS: list[Path] = []


def _precheck_flags(python: str, request: RunRequest) -> None:
    """With the target torch's flag catalog cached (`guarddiag flags`, `compare`), a wrong flag is refused
    at once; otherwise the child refuses it after importing torch (seconds)."""
    from guarddiag.flags import cached_catalog, check_flags

    catalog = cached_catalog(python, request.workdir / "cache")
    if catalog is None:
        return
    try:
        check_flags(catalog, request.flags)
    except InputError as exc:
        where = f" [{request.label}]" if request.label else ""
        raise InputError(f"{exc}{where}; fix or drop the --flag; nothing was run") from None


def _run_dir(workdir: Path, script: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    # A folder name has 255 bytes at most: a long script name is cut (the record names the script whole).
    stem = script.stem.encode("utf-8")[:_MAX_STEM_BYTES].decode("utf-8", "ignore")
    base = workdir / "runs" / f"{stamp}-{stem}-{os.getpid()}"
    for n in itertools.count(1):
        # Parallel runs of one compare share pid and second: mkdir itself decides who gets which name.
        path = base if n == 1 else Path(f"{base}-{n}")
        try:
            path.mkdir(parents=True)
            return Path(os.path.abspath(path))  # records and messages name the log wherever they are read
        except (FileExistsError, NotADirectoryError):
            if path.is_dir():
                continue  # taken by a parallel run
            blocker = next((p for p in (workdir, workdir / "runs") if not p.is_dir()), workdir)
            raise InputError(
                f"{blocker}: cannot create the run folder (it exists and is not a folder, or is a broken link); "
                "remove it or run from another folder"
            ) from None
        except OSError as exc:
            raise InputError(f"{workdir}: cannot create the run folder ({exc.strerror}); run from a writable folder") from None
    raise AssertionError("unreachable")


def execute(request: RunRequest) -> Run:
    """Run the script under torch logging and return its run record (also saved in the run folder)."""
    keep_runs()  # a bad GUARDDIAG_KEEP_RUNS is an error before anything runs, not after
    if request.timeout is not None and not request.timeout > 0:  # also refuses nan
        raise InputError(f"--timeout {request.timeout}: not a number of seconds above 0; give e.g. --timeout 600")
    check_script(request.script)
    python = _check_python(request.python)
    if request.flags:
        _precheck_flags(python, request)
    run_dir = _run_dir(request.workdir, request.script)
    RUN_FOLDERS.append(run_dir)
    log_path, meta_path, spec_path = run_dir / "torch.log", run_dir / "meta.json", run_dir / "spec.json"
    log_path.touch()
    ledger_path = run_dir / _bootstrap.LEDGER_NAME
    ledger_path.touch()
    spec = {
        "script": str(request.script),
        "args": list(request.args),
        "flags": [{"name": n, "value": v} for n, v in request.flags],
        "log_path": str(log_path.resolve()),
        "meta_path": str(meta_path.resolve()),
    }
    spec_path.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    env = _without_outer_run(dict(os.environ))
    env.update(request.env)
    # Every process of the run carries its folder in the environment it was started with (forks too:
    # /proc/PID/environ shows that, not later changes): how orphans adopted by guarddiag are told apart.
    env[_process.RUN_MARK] = str(log_path.resolve().parent)
    env["TORCH_LOGS"] = merge_torch_logs(env.get("TORCH_LOGS"))
    # torch's log lines go to guarddiag's file, not the user's terminal: keep them in the format it reads.
    env.pop("TORCH_LOGS_FORMAT", None)
    become_subreaper()
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        # Held open while the script runs: a script that removes its run folder cannot take the log with it.
        held = [(path, stack.enter_context(path.open("rb"))) for path in (log_path, ledger_path)]
        streams = {}
        if request.capture_output:
            streams = {
                "stdout": stack.enter_context((run_dir / "stdout.txt").open("wb")),
                "stderr": stack.enter_context((run_dir / "stderr.txt").open("wb")),
                "stdin": subprocess.DEVNULL,
            }
        try:
            child = subprocess.Popen([python, _bootstrap.__file__, str(spec_path.resolve())], env=env, **streams)
        except OSError as exc:
            raise InputError(
                f"--python {request.python}: cannot start it ({exc.strerror}); give the path of a Python that has torch installed"
            ) from None
        with _LIVE_LOCK:
            _LIVE.add(child)
            _RUN_DIRS[child.pid] = env[_process.RUN_MARK]
        try:
            status, code = _wait(child, request.timeout)
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(child)
                _RUN_DIRS.pop(child.pid, None)
        recreated = _recreate_if_removed(run_dir, held)
    duration = time.monotonic() - started
    meta = _read_meta(meta_path)
    error = meta.get("error")
    if code == _bootstrap.REFUSED and isinstance(error, dict):
        hint = f" (did you mean: {', '.join(error['suggestions'])}?)" if error.get("suggestions") else ""
        what = {
            "flag": "fix or drop the --flag",
            "import": "fix what torch names (e.g. TORCH_LOGS) or pick another --python",
        }.get(error.get("kind"), "install torch there or pick another --python")
        where = f" [{request.label}]" if request.label else ""
        # Nothing ran: the folder holds only the request and an empty log. Leave no trace of it.
        shutil.rmtree(run_dir, ignore_errors=True)
        raise InputError(f"{error['message']}{hint}{where}; {what}; nothing was run")
    if status in ("ok", "failed") and meta.get("phase") != "script" and not (recreated and _ledger_started(ledger_path)):
        # /bin/echo, /bin/false, a Python too old to read the bootstrap: the script never started.
        raise InputError(
            f"--python {request.python} exited (status {code}) without starting guarddiag's bootstrap; "
            f"give the path of a Python 3.8+ that has torch installed (log folder: {run_dir})"
        )
    try:
        functions, stats, torch_compiles = _parse_run_logs(run_dir, log_path)
    except OSError as exc:
        raise InputError(
            f"{run_dir}: cannot read the run's torch log ({exc.strerror}: {exc.filename}); "
            "did the script delete or change its run folder?"
        ) from None
    run = Run(
        functions=functions,
        parse=stats,
        torch_version=meta.get("torch_version"),
        exit_code=code,
        source="run",
        status=status,
        script=str(request.script),
        argv=tuple(request.args),
        flags={n: v for n, v in request.flags},
        config=dict(meta.get("config") or {}),
        flag_notes=tuple(meta.get("flag_notes") or ()),
        torch_compiles=torch_compiles,
        log_path=str(log_path),
        duration_s=round(duration, 3),
        error=meta.get("exception"),
        error_flags=tuple(meta.get("exception_flags") or ()),
        unobserved=_unobserved(run_dir),
        folder_recreated=recreated,
    )
    try:
        save_run(run, run_dir / "run.json")
        prune_runs(run_dir.parent, keep_runs())
    except OSError as exc:
        raise InputError(
            f"{run_dir}: cannot write the run record ({exc.strerror}); did the script delete or change its run folder?"
        ) from None
    return run


def _parse_run_logs(run_dir: Path, log_path: Path) -> tuple[tuple[FunctionSummary, ...], ParseStats, int | None]:
    """The main process's log, then the logs of processes the script started (child1, child2, ... by pid),
    each with torch's own record of its compiles; and the compiles torch recorded in the main process."""
    ledger = read_ledger(run_dir / _bootstrap.LEDGER_NAME)
    with log_path.open(encoding="utf-8", errors="replace") as fh:
        functions, stats = build_from_lines(fh, ledger=ledger or ())
    children = sorted(run_dir.glob("torch.child-*.log"), key=lambda p: int(p.stem.rpartition("-")[2] or 0))
    for number, path in enumerate(children, 1):
        child_ledger = read_ledger(path.with_name(f"{path.stem}.compiles.jsonl")) or ()
        with path.open(encoding="utf-8", errors="replace") as fh:
            child_functions, child_stats = build_from_lines(fh, ledger=child_ledger)
        functions += tuple(in_process(f, f"child{number}") for f in child_functions)
        stats = add_stats(stats, child_stats)
    return functions, stats, compiles_in(ledger)


def _recreate_if_removed(run_dir: Path, held: list[tuple[Path, BinaryIO]]) -> bool:
    """When the script removed its run folder (or the files in it), write the held-open files back."""
    if all(path.exists() for path, _ in held):
        return False
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        for path, fh in held:
            if not path.exists():
                fh.seek(0)
                with path.open("wb") as out:
                    shutil.copyfileobj(fh, out)
    except OSError as exc:
        raise InputError(f"{run_dir}: the script removed its run folder and it cannot be re-created ({exc.strerror})") from None
    return True


def _ledger_started(path: Path) -> bool:
    """The bootstrap wrote torch's ledger header before it started the script."""
    try:
        with path.open("rb") as fh:
            return fh.readline().startswith(b'{"ledger"')
    except OSError:
        return False


def _unobserved(run_dir: Path) -> tuple[str, ...]:
    """Python processes the script started with an environment that dropped guarddiag's variables."""
    try:
        lines = (run_dir / _process.UNOBSERVED_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    found = []
    for line in lines:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            found.append(" ".join(" ".join(str(a) for a in json.loads(line)["argv"]).split()))
    return tuple(dict.fromkeys(found))


def execute_many(requests: Sequence[RunRequest], jobs: int, on_done: Callable[[RunRequest, Run], None] | None = None) -> list[Run]:
    """Run several requests, ``jobs`` at a time, each its own child process; results in request order.

    Parallel children share the cores: unless the user set ``OMP_NUM_THREADS``, each gets
    cores / parallel runs, so that two torch processes on two cores do not each start two threads.
    """
    parallel = max(1, min(jobs, len(requests)))
    if parallel > 1 and "OMP_NUM_THREADS" not in os.environ:
        share = str(max(1, (os.cpu_count() or 1) // parallel))
        requests = [replace(r, env=(*r.env, ("OMP_NUM_THREADS", share))) for r in requests]
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {pool.submit(execute, r): i for i, r in enumerate(requests)}
        results: list[Run | None] = [None] * len(requests)
        try:
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                results[index] = future.result()
                if on_done is not None:
                    on_done(requests[index], results[index])
        except KeyboardInterrupt:
            # Ctrl-C reaches this thread only; the runs wait in others. Stop them all (their partial
            # records are saved as interrupted), then report the interrupt.
            for future in futures:
                future.cancel()
            _stop_all_live()
            concurrent.futures.wait(futures)
            raise KeyboardInterrupt from None
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return [r for r in results if r is not None]


def _stop_all_live(grace: float = 10) -> None:
    """Stop every running child and what it started (see _stop); KILL at once on a second Ctrl-C."""
    _STOPPING.set()
    with _LIVE_LOCK:
        children = list(_LIVE)
    trees = {proc: _tree(proc) for proc in children}
    try:
        _stop(trees, signal.SIGINT, grace)
    except KeyboardInterrupt:
        _kill(trees)


# Children running now (compare and check run several from threads), for stopping them all on Ctrl-C,
# and the run folder of each (child pid -> folder), which every process of that run has in its environment.
_LIVE: set[subprocess.Popen] = set()
_RUN_DIRS: dict[int, str] = {}
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def _wait(proc: subprocess.Popen, timeout: float | None) -> tuple[str, int]:
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


def _read_meta(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
