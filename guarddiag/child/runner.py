"""Start the user's script in a child interpreter with torch logging on, and say what it did.

The child runs ``_bootstrap.py`` by path (guarddiag need not be installed in the target
environment). Its stdin, stdout and stderr are the user's; torch's log lines go to a
file under ``.guarddiag/runs/<id>/`` that stays on disk whatever happens. Only spawning is
here: the request is checked in ``commands/spawn.py``, the run built from the folder in ``buildrun.py``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from guarddiag.child import _bootstrap, proctree
from guarddiag.child._site import _guarddiag_process as _process
from guarddiag.child.folders import RUN_FOLDERS, new_run_dir, recreate_if_removed
from guarddiag.guardfilters import guard_filter_since

T = TypeVar("T")

# Log channels guarddiag needs; `dynamo` at INFO names the frame behind each compile id.
REQUIRED_LOGS = ("dynamo", "guards", "recompiles", "graph_breaks")
# The script's output in its run folder when captured (RunRequest.capture_output).
STDOUT_NAME = "stdout.txt"
# The TORCH_TRACE folder in the run folder (RunRequest.trace): one file per process of the run, as torch names them.
TRACE_NAME = "trace"


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
    env.pop(_process.RANK_TAKEN, None)
    site = os.path.join(os.path.dirname(os.path.abspath(_bootstrap.__file__)), "_site")
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != site]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    else:
        env.pop("PYTHONPATH", None)
    return env


@dataclass(frozen=True)
class RunRequest:
    """What to run and how: a ``script``, or a ``module`` as ``python -m MODULE`` runs it."""

    script: Path | None
    args: tuple[str, ...] = ()
    python: str = sys.executable
    flags: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None
    workdir: Path = field(default_factory=lambda: Path(".guarddiag"))
    # Parallel runs (compare) keep the script's output in the run folder instead of the terminal.
    capture_output: bool = False
    label: str = ""
    env: tuple[tuple[str, str], ...] = ()
    module: str | None = None
    # Keep a TORCH_TRACE folder (tlparse's input, what PyTorch's issues ask for) in the run folder.
    trace: bool = False
    # Measure each call's cache lookup (guard check) with torch's profiler in the script's process.
    measure_guards: bool = False


# What a child did, beside proctree.wait's statuses of a script that ran (ok, failed, timeout,
# interrupted, killed): nothing of the script ran in these.
UNSTARTABLE = "unstartable"  # the interpreter could not be started (ChildRun.start_error says why)
NO_BOOTSTRAP = "no_bootstrap"  # it exited without starting guarddiag's bootstrap (/bin/echo, a Python too old)
REFUSED = "refused"  # the bootstrap refused the request (ChildRun.refusal: a flag, torch's import, the module)


@dataclass(frozen=True)
class ChildRun:
    """What one child did: its run folder, its status and exit code, how long it took, what the
    bootstrap wrote in ``meta.json`` and the Python processes seen in it. Nothing is parsed here."""

    request: RunRequest
    folder: Path
    status: str
    exit_code: int | None
    duration_s: float
    # meta.json as the bootstrap wrote it: torch's version, the config in force, the script's exception.
    meta: Mapping[str, object] = field(default_factory=dict)
    sightings: tuple[proctree.Sighting, ...] = ()
    # The script removed its run folder and guarddiag put back the files it held open.
    folder_recreated: bool = False
    # The OS's reason the interpreter could not be started (status UNSTARTABLE).
    start_error: str = ""

    @property
    def log_path(self) -> Path:
        """The script's own process's torch log."""
        return self.folder / "torch.log"

    @property
    def ledger_path(self) -> Path:
        """torch's own record of the script's process's compiles, as the bootstrap wrote it."""
        return self.folder / _bootstrap.LEDGER_NAME

    @property
    def trace_path(self) -> Path | None:
        """The TORCH_TRACE folder torch wrote for the run (``RunRequest.trace``), else None."""
        return self.folder / TRACE_NAME if self.request.trace else None

    @property
    def refusal(self) -> Mapping[str, object]:
        """What the bootstrap refused (status REFUSED): ``kind``, ``message`` and ``suggestions``."""
        error = self.meta.get("error")
        return error if isinstance(error, dict) else {}


def execute(request: RunRequest) -> ChildRun:
    """Run the script under torch logging in a new run folder and say what it did; the request is
    checked before (guarddiag.commands.spawn), the run built after (guarddiag.buildrun)."""
    run_dir = new_run_dir(request.workdir, request.module or Path(str(request.script)).stem)
    RUN_FOLDERS.append(run_dir)
    log_path, meta_path, spec_path = run_dir / "torch.log", run_dir / "meta.json", run_dir / "spec.json"
    log_path.touch()
    ledger_path = run_dir / _bootstrap.LEDGER_NAME
    ledger_path.touch()
    spec = {
        "script": None if request.script is None else str(request.script),
        "module": request.module,
        "args": list(request.args),
        "flags": [{"name": n, "value": v} for n, v in request.flags],
        # For the child's one line when its torch lacks the --guard-filter helper.
        "guard_filter_since": guard_filter_since(request.flags),
        "log_path": str(log_path.resolve()),
        "meta_path": str(meta_path.resolve()),
        # The script dies with guarddiag (_bootstrap._die_with_guarddiag), which may be gone already.
        "guarddiag_pid": os.getpid(),
        "measure_guards": request.measure_guards,
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
    if request.trace:
        # Every process of the run inherits it: torch writes one trace file per process in the folder.
        env["TORCH_TRACE"] = str((run_dir / TRACE_NAME).resolve())
    proctree.become_subreaper()
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        # Held open while the script runs: a script that removes its run folder cannot take the log with it.
        held = [(path, stack.enter_context(path.open("rb"))) for path in (log_path, ledger_path)]
        streams = {}
        if request.capture_output:
            streams = {
                "stdout": stack.enter_context((run_dir / STDOUT_NAME).open("wb")),
                "stderr": stack.enter_context((run_dir / "stderr.txt").open("wb")),
                "stdin": subprocess.DEVNULL,
            }
        try:
            python = find_interpreter(request.python) or request.python
            child = subprocess.Popen([python, _bootstrap.__file__, str(spec_path.resolve())], env=env, **streams)
        except OSError as exc:
            return ChildRun(request, run_dir, UNSTARTABLE, None, 0.0, start_error=exc.strerror or str(exc))
        with proctree.tracked(child, env[_process.RUN_MARK]) as processes:
            status, code = proctree.wait(child, request.timeout)
        recreated = recreate_if_removed(run_dir, held)
    duration = time.monotonic() - started
    meta = _read_meta(meta_path)
    if code == _bootstrap.REFUSED and isinstance(meta.get("error"), dict):
        # Nothing ran: the folder holds only the request and an empty log. Leave no trace of it.
        shutil.rmtree(run_dir, ignore_errors=True)
        status = REFUSED
    elif status in ("ok", "failed") and meta.get("phase") != "script" and not (recreated and _ledger_started(ledger_path)):
        status = NO_BOOTSTRAP
    return ChildRun(request, run_dir, status, code, duration, meta, tuple(processes.seen.values()), recreated)


def find_interpreter(python: str) -> str | None:
    """The interpreter's path (a bare name, ``python3``, looked up on PATH); None: no such executable."""
    return shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)


def _ledger_started(path: Path) -> bool:
    """The bootstrap wrote torch's ledger header before it started the script."""
    try:
        with path.open("rb") as fh:
            return fh.readline().startswith(b'{"ledger"')
    except OSError:
        return False


# ``python -m`` names of torchrun; its default rendezvous (no --standalone, no endpoint) is MASTER_PORT 29500.
_LAUNCHERS = ("torch.distributed.run", "torch.distributed.launch")
# torchrun's options that take no value (store_true); every other option before the training script takes one.
_LAUNCHER_FLAGS = frozenset({
    "--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path",
    "--virtual-local-rank", "--virtual_local_rank", "--use-env", "--use_env", "-h", "--help",
})


def _launcher_options(args: Sequence[str]) -> dict[str, str]:
    """torchrun's own options (``--rdzv_endpoint`` read as ``--rdzv-endpoint``), up to the training
    script: what follows it is the script's own arguments (a script may take a ``--master-port``)."""
    found: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg == "--":
            break
        name, eq, value = arg.partition("=")
        if name not in _LAUNCHER_FLAGS and not eq:
            i += 1
            value = args[i] if i < len(args) else ""
        found["--" + name.lstrip("-").replace("_", "-") if name.startswith("--") else name] = value
        i += 1
    return found


def rendezvous_address(request: RunRequest) -> str | None:
    """The fixed address where the ranks of a torchrun launch meet (``localhost:29400``, ``port 29500``),
    or None: not a torchrun launch, or one that picks a free port for itself (``--standalone``). Read
    from torchrun's own options only (before the training script), or its ``PET_`` variables."""
    if request.module not in _LAUNCHERS and (request.script is None or request.script.name != "torchrun"):
        return None
    options = _launcher_options(request.args)
    env = {**os.environ, **dict(request.env)}

    def option(name: str) -> str | None:
        return options.get(name, env.get("PET_" + name.lstrip("-").replace("-", "_").upper()))

    if "--standalone" in options or env.get("PET_STANDALONE"):
        return None
    endpoint = option("--rdzv-endpoint")
    if endpoint:
        return endpoint
    backend = option("--rdzv-backend") or "static"
    if backend != "static":
        return f"{backend} rendezvous at its default endpoint"  # c10d: localhost:29400
    return f"port {option('--master-port') or 29500}"


def shared_rendezvous(requests: Sequence[RunRequest]) -> list[str]:
    """The fixed addresses where several of these runs of a torchrun job would meet: they take turns."""
    meeting = [rendezvous_address(r) for r in requests]
    return [a for a in dict.fromkeys(meeting) if a is not None and meeting.count(a) > 1]


def execute_many(
    requests: Sequence[RunRequest],
    jobs: int,
    then: Callable[[ChildRun], T],
    on_done: Callable[[RunRequest, T], None] | None = None,
) -> list[T]:
    """Run several requests, ``jobs`` at a time, each its own child process, and ``then`` on each
    child's outcome in the thread that ran it; results in request order (``on_done`` as each ends).

    Parallel children share the cores: unless the user set ``OMP_NUM_THREADS``, each gets
    cores / parallel runs, so that two torch processes on two cores do not each start two threads.
    """
    parallel = max(1, min(jobs, len(requests)))
    if parallel > 1 and "OMP_NUM_THREADS" not in os.environ:
        share = str(max(1, (os.cpu_count() or 1) // parallel))
        requests = [replace(r, env=(*r.env, ("OMP_NUM_THREADS", share))) for r in requests]
    # Runs of a torchrun job that meet at one fixed address would join each other's rendezvous (or
    # fail to bind it): they take turns.
    meeting = {i: rendezvous_address(r) for i, r in enumerate(requests)}
    turns = {address: threading.Lock() for address in meeting.values() if address is not None}

    def turn(i: int) -> T:
        address = meeting[i]
        with turns[address] if address is not None else contextlib.nullcontext():
            return then(execute(requests[i]))

    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {pool.submit(turn, i): i for i in range(len(requests))}
        results: list[tuple[T] | None] = [None] * len(requests)
        try:
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                result = future.result()
                results[index] = (result,)
                if on_done is not None:
                    on_done(requests[index], result)
        except KeyboardInterrupt:
            # Ctrl-C reaches this thread only; the runs wait in others. Stop them all (their partial
            # records are saved as interrupted), then report the interrupt.
            for future in futures:
                future.cancel()
            proctree.stop_all_live()
            concurrent.futures.wait(futures)
            proctree.stopped()
            raise KeyboardInterrupt from None
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return [r[0] for r in results if r is not None]


def _read_meta(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
