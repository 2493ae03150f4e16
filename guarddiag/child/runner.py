"""Start the user's script in a child interpreter with torch logging on, and read its log.

The child runs ``_bootstrap.py`` by path (guarddiag need not be installed in the target
environment). Its stdin, stdout and stderr are the user's; torch's log lines go to a
file under ``.guarddiag/runs/<id>/`` that stays on disk whatever happens.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from guarddiag.child import _bootstrap, proctree
from guarddiag.child._site import _guarddiag_hooks as _hooks
from guarddiag.child._site import _guarddiag_process as _process
from guarddiag.child.folders import RUN_FOLDERS, keep_runs, new_run_dir, recreate_if_removed
from guarddiag.child.processes import read_run_logs
from guarddiag.errors import InputError
from guarddiag.model import Job, LateHook, Run, Unobserved
from guarddiag.render.escape import one_line
from guarddiag.store import late_hook_from_dict, save_run, write_failure

# Log channels guarddiag needs; `dynamo` at INFO names the frame behind each compile id.
REQUIRED_LOGS = ("dynamo", "guards", "recompiles", "graph_breaks")
# The script's output in its run folder when captured (RunRequest.capture_output).
STDOUT_NAME = "stdout.txt"
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
    env.pop(_process.RANK_TAKEN, None)
    site = os.path.join(os.path.dirname(os.path.abspath(_bootstrap.__file__)), "_site")
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


def execute(request: RunRequest) -> Run:
    """Run the script under torch logging and return its run record (also saved in the run folder)."""
    keep_runs()  # a bad GUARDDIAG_KEEP_RUNS is an error before anything runs, not after
    if request.timeout is not None and not request.timeout > 0:  # also refuses nan
        raise InputError(f"--timeout {request.timeout}: not a number of seconds above 0; give e.g. --timeout 600")
    if request.module is None:
        check_script(request.script)
    python = _check_python(request.python)
    if request.flags:
        _precheck_flags(python, request)
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
        "log_path": str(log_path.resolve()),
        "meta_path": str(meta_path.resolve()),
        # The script dies with guarddiag (_bootstrap._die_with_guarddiag), which may be gone already.
        "guarddiag_pid": os.getpid(),
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
            child = subprocess.Popen([python, _bootstrap.__file__, str(spec_path.resolve())], env=env, **streams)
        except OSError as exc:
            raise InputError(
                f"--python {request.python}: cannot start it ({exc.strerror}); give the path of a Python that has torch installed"
            ) from None
        with proctree.tracked(child, env[_process.RUN_MARK]) as processes:
            status, code = proctree.wait(child, request.timeout)
        recreated = recreate_if_removed(run_dir, held)
    duration = time.monotonic() - started
    meta = _read_meta(meta_path)
    error = meta.get("error")
    if code == _bootstrap.REFUSED and isinstance(error, dict):
        hint = f" (did you mean: {', '.join(error['suggestions'])}?)" if error.get("suggestions") else ""
        what = {
            "flag": "fix or drop the --flag",
            "import": "fix what torch names (e.g. TORCH_LOGS) or pick another --python",
            "module": "give a module that `python -m` runs there (run from the folder that holds it, or install it)",
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
        logs = read_run_logs(run_dir, log_path, ledger_path)
    except OSError as exc:
        raise InputError(
            f"{run_dir}: cannot read the run's torch log ({exc.strerror}: {exc.filename}); "
            "did the script delete or change its run folder?"
        ) from None
    run = Run(
        functions=logs.functions,
        parse=logs.stats,
        torch_version=meta.get("torch_version"),
        exit_code=code,
        source="run",
        status=status,
        script=None if request.script is None else str(request.script),
        argv=tuple(request.args),
        flags={n: v for n, v in request.flags},
        config=dict(meta.get("config") or {}),
        flag_notes=tuple(meta.get("flag_notes") or ()),
        torch_compiles=logs.torch_compiles,
        log_path=str(log_path),
        duration_s=round(duration, 3),
        error=meta.get("exception"),
        error_flags=tuple(meta.get("exception_flags") or ()),
        unobserved=_unobserved(run_dir, processes.seen.values()),
        folder_recreated=recreated,
        late_hooks=_late_hooks(run_dir),
        module=request.module,
        job=Job("run", logs.processes) if logs.processes else None,
        stances=logs.stances,
    )
    try:
        save_run(run, run_dir / "run.json")
    except OSError as exc:
        _unsaved(run_dir / "run.json", exc)
    return run


# Why run records could not be written, said once per command (a full disk fails every run of a compare).
_UNSAVED: set[str] = set()


def _unsaved(path: Path, exc: OSError) -> None:
    """The folder's copy of the record is not needed for the report or ``--out``: say why it is missing, go on."""
    why, fix = write_failure(exc)
    if why in _UNSAVED:
        return
    _UNSAVED.add(why)
    fix = fix or "did the script delete or change its run folder?"
    warning = f"guarddiag: warning: {path}: cannot write the run record ({why}); the report is made without it; {fix}"
    print(one_line(warning), file=sys.stderr)


def _ledger_started(path: Path) -> bool:
    """The bootstrap wrote torch's ledger header before it started the script."""
    try:
        with path.open("rb") as fh:
            return fh.readline().startswith(b'{"ledger"')
    except OSError:
        return False


# An unobserved process's command line in the record is cut there (a `python -c` may carry a program).
_ARGV_CHARS = 1000


def _unobserved(run_dir: Path, seen: Iterable[proctree.Sighting]) -> tuple[Unobserved, ...]:
    """The Python processes seen in the run that did not say they run guarddiag's hooks (the file
    ``observed/<pid>`` holding their command line), each with why, as far as can be told."""
    found = []
    for sighting in seen:
        try:
            if (run_dir / _process.OBSERVED_DIR / str(sighting.pid)).read_bytes() == sighting.cmdline:
                continue
        except OSError:
            pass
        argv = sighting.argv
        command = " ".join(" ".join(argv).split())[:_ARGV_CHARS]
        found.append(Unobserved(command, sighting.pid, _why_unobserved(argv, sighting, run_dir), sighting.torch))
    return tuple(found)


def _interpreter_letters(argv: list[str]) -> str:
    """The one-letter options Python reads before the script, ``-c`` or ``-m`` (``-IE``: ``IE``)."""
    letters = ""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--") and arg != "--":
            i += 2 if arg == "--check-hash-based-pycs" else 1  # its value is the next argument
            continue
        if not arg.startswith("-") or arg in ("-", "--"):
            break
        for j, letter in enumerate(arg[1:]):
            if letter in "cm":
                return letters  # the code or module follows: Python reads no more options
            if letter in "WX":  # takes a value: the rest of the argument, else the next one
                i += j == len(arg) - 2
                break
            letters += letter
        i += 1
    return letters


def _why_unobserved(argv: list[str], sighting: proctree.Sighting, run_dir: Path) -> str:
    """Why guarddiag's start-up hook did not run in a process (Unobserved.reason): its interpreter
    options first, then the environment it was started with."""
    if len(argv) > 1 and os.path.isfile(os.path.join(os.path.dirname(argv[1]), "_site", "sitecustomize.py")):
        return "guarddiag"  # another guarddiag's bootstrap: the script ran guarddiag, which counts it
    letters = _interpreter_letters(argv)
    for letter, reason in (("I", "isolated"), ("E", "ignore_environment"), ("S", "no_site")):
        if letter in letters:
            return reason
    if sighting.run_mark is None:
        return "no_run_mark"
    if sighting.run_mark != str(run_dir.resolve()):
        return "other_run"
    site = os.path.dirname(os.path.abspath(_process.__file__))
    if not any(os.path.abspath(p) == site for p in (sighting.pythonpath or "").split(os.pathsep) if p):
        return "pythonpath"
    return ""


def _late_hooks(run_dir: Path) -> tuple[LateHook, ...]:
    """Hooks the script's processes added to compiled modules after torch compiled, as they wrote them
    at exit (``_site/_guarddiag_hooks.py``); a line that is not such a record is skipped."""
    try:
        lines = (run_dir / _hooks.HOOKS_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    found = []
    for line in lines:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            fact = json.loads(line)
            fact.pop("pid", None)
            found.append(late_hook_from_dict(fact, "hooks.jsonl"))
    return tuple(found)


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


def execute_many(requests: Sequence[RunRequest], jobs: int, on_done: Callable[[RunRequest, Run], None] | None = None) -> list[Run]:
    """Run several requests, ``jobs`` at a time, each its own child process; results in request order.

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
    shared = [a for a in turns if sum(m == a for m in meeting.values()) > 1]
    if parallel > 1 and shared:
        print(
            one_line(
                f"guarddiag: these runs of a torchrun job all meet at {', '.join(shared)}: they run one at a time "
                "(give torchrun --standalone, or a free --rdzv-endpoint per run, to run them in parallel)"
            ),
            file=sys.stderr,
        )

    def turn(i: int) -> Run:
        address = meeting[i]
        with turns[address] if address is not None else contextlib.nullcontext():
            return execute(requests[i])

    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {pool.submit(turn, i): i for i in range(len(requests))}
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
            proctree.stop_all_live()
            concurrent.futures.wait(futures)
            proctree.stopped()
            raise KeyboardInterrupt from None
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return [r for r in results if r is not None]


def _read_meta(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
