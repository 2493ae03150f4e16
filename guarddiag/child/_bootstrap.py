"""Runs inside the child interpreter: route torch's logs to a file, apply config flags, run the script.

This file is executed by path (``python _bootstrap.py SPEC.json``) in the target
environment, where guarddiag itself may not be installed: it imports only the standard
library and torch, and loads its sibling files by path (``_torchflags.py``: checking and
setting the flags; ``_site/_guarddiag_process.py``: what every process of the run installs;
``_site/_guarddiag_hooks.py``: hooks added to compiled modules late).
It writes what it learned (torch version, config values in force, or why it refused to
start) to the ``meta`` file named in the spec. ``python _bootstrap.py --describe OUT.json``
writes the catalog of this interpreter's config flags instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import traceback
from collections.abc import Callable

# Exit status of the child when the bootstrap refused to start the script (details in meta).
REFUSED = 120
# The --flag name a guard filter travels under (run --guard-filter, compare --flag): a torch.compile option, not
# a config flag; its value is a torch.compiler helper's name, and the spec says the first torch that has it.
GUARD_FILTER_FLAG = "compile.guard_filter_fn"
# torch's own record of the main process's compiles, in the run folder (children: torch.child-<pid>.compiles.jsonl).
LEDGER_NAME = "torch.compiles.jsonl"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, *path: str):
    """A file of this folder loaded by path (guarddiag need not be importable here), as module ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, *path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_flags = _load("_guarddiag_torchflags", "_torchflags.py")
_filter = _load("_guarddiag_guardfilter", "_guardfilter.py")
# guarddiag suggests flag names the way the child does, and knows the config modules it sets (flags.py).
suggestions = _flags.suggestions
CONFIG_MODULES = _flags.CONFIG_MODULES


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    _die_with_guarddiag(spec.get("guarddiag_pid"))
    meta: dict[str, object] = {"phase": "bootstrap", "python": sys.version.split()[0]}
    log = open(spec["log_path"], "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the child
    # Loaded under the name the processes the script starts import it by (see _site).
    hooks = _load("_guarddiag_process", "_site", "_guarddiag_process.py")
    with hooks.stderr_to(log):
        try:
            import torch
        except ImportError as exc:
            return _refuse(spec, meta, "torch", f"cannot import torch in {sys.executable}: {exc}")
        except KeyboardInterrupt:
            return 130  # Ctrl-C while torch loads: guarddiag reports the interrupted run
        except Exception as exc:  # noqa: BLE001 - e.g. TORCH_LOGS=nonsense raises ValueError at import
            return _refuse(spec, meta, "import", f"importing torch failed in {sys.executable}: {_flags.exception_line(exc)}")
    # A script calling torch._logging.set_logs re-creates the handlers: keep them on the log file.
    hooks.route_log_setups(sys.modules.get("torch._logging._internal"), lambda: log)
    meta["torch_version"] = torch.__version__
    flags = [f for f in spec.get("flags", []) if f["name"] != GUARD_FILTER_FLAG]
    try:
        meta["config"], meta["flag_notes"] = _flags.apply_flags(flags)
    except _flags.FlagError as exc:
        return _refuse(spec, meta, "flag", str(exc), exc.suggestions)
    for wanted in (f for f in spec.get("flags", []) if f["name"] == GUARD_FILTER_FLAG):
        try:
            _filter.install(wanted["value"], spec.get("guard_filter_since", "?"))
        except _filter.Missing as exc:
            return _refuse(spec, meta, "guard_filter", str(exc))
        meta["config"][GUARD_FILTER_FLAG] = wanted["value"]
    meta["phase"] = "script"
    _write_meta(spec, meta)
    run_dir = os.path.dirname(spec["log_path"])
    hooks.note_observed(run_dir)
    _route_child_processes(run_dir, hooks)
    hooks.route_forks(run_dir, log)
    # torch's own record of each compile, to check the log against (read by the runner).
    hooks.add_sink(hooks.FileSink(os.path.join(run_dir, LEDGER_NAME), eager=True))
    # Hooks added to a compiled module after it compiled, and whether they ran (read by the runner).
    _load("_guarddiag_hooks", "_site", "_guarddiag_hooks.py").install(run_dir)
    # Calls a compiler stance refused to recompile, into the ledger (read by the runner).
    _load("_guarddiag_stance", "_site", "_guarddiag_stance.py").install()
    # What each call's cache lookup costs (run --measure-guards): torch's profiler, on from here to the script's end.
    guard_time = _load("_guarddiag_guardtime", "_site", "_guarddiag_guardtime.py") if spec.get("measure_guards") else None
    if guard_time is not None:
        guard_time_path = os.path.join(run_dir, guard_time.GUARD_TIME_NAME)
        guard_time.start(guard_time_path, log.fileno())
    main_pid = os.getpid()

    def record(exc: BaseException) -> None:
        # Written before the script's own excepthook runs: it may end the process (os._exit).
        if os.getpid() == main_pid:
            meta["exception"] = _flags.exception_line(exc)
            meta["exception_flags"] = _flags.flags_named_in(meta["exception"], spec.get("flags", []))
            _write_meta(spec, meta)

    try:
        code = _run_main(spec.get("module"), spec.get("script"), spec.get("args", []), record)
    except _NoModule as no_module:
        return _refuse(spec, meta, "module", str(no_module))
    except _filter.Taken as taken:
        return _refuse(spec, meta, "guard_filter", str(taken))
    if os.getpid() != main_pid:
        return code  # a child the script forked with os.fork() that ran on to the end: not the run
    if guard_time is not None:
        guard_time.finish(guard_time_path, log.fileno())
    _write_meta(spec, meta)
    return code


def _die_with_guarddiag(guarddiag_pid: object) -> None:
    """The script is killed when guarddiag dies, even by SIGKILL (Linux PR_SET_PDEATHSIG): else it runs
    on as an orphan nobody reports. Checked against guarddiag's pid: it may have died before this ran."""
    if not sys.platform.startswith("linux") or not isinstance(guarddiag_pid, int):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != guarddiag_pid:
        os.kill(os.getpid(), signal.SIGKILL)


def _route_child_processes(run_dir: str, hooks) -> None:
    """Processes the script starts itself log to files of their own in the run folder (see _site)."""
    site = os.path.join(_HERE, "_site")
    os.environ[hooks.RUN_MARK] = run_dir
    if "RANK" in os.environ:  # the script itself has a rank (guarddiag run under torchrun): its children do not
        os.environ[hooks.RANK_TAKEN] = hooks.rank_identity()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p)


def _refuse(spec, meta, kind: str, message: str, suggestions: list[str] | None = None) -> int:
    meta["error"] = {"kind": kind, "message": message, "suggestions": suggestions or []}
    _write_meta(spec, meta)
    return REFUSED


def _write_meta(spec, meta) -> None:
    tmp = spec["meta_path"] + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(meta, fh)
        os.replace(tmp, spec["meta_path"])
    except OSError:
        # The script removed its run folder (guarddiag reads the log it holds open, and says so), or the
        # disk is full (the meta written before the script stays): leave no half-written temp file.
        with contextlib.suppress(OSError):
            os.unlink(tmp)


class _NoModule(Exception):
    """``-m MODULE`` names nothing ``python -m MODULE`` could run."""


def _module_file(module: str) -> str:
    """The file ``python -m MODULE`` would run (a package's ``__main__.py``), found as it finds it:
    with the current folder first on ``sys.path``. Importing the parents of a dotted name runs them."""
    import importlib.util

    sys.path[0] = os.getcwd()  # as `python -m` sets it (this folder is the bootstrap's own otherwise)
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            main = importlib.util.find_spec(module + ".__main__")
            if main is None:
                raise _NoModule(f"-m {module}: is a package without a __main__ module, so it cannot be run")
            spec = main
    except (ImportError, ValueError) as exc:  # a parent package missing, a relative name
        raise _NoModule(f"-m {module}: cannot be found by {sys.executable} ({_flags.exception_line(exc)})") from None
    if spec is None or spec.loader is None:
        raise _NoModule(f"-m {module}: no such module for {sys.executable} (looked in the current folder and sys.path)")
    return spec.origin or module


def _run_main(module: str | None, script: str | None, args: list[str], record: Callable[[BaseException], None]) -> int:
    """Run the script as ``python SCRIPT ARGS`` would (``__main__``, argv, sys.path[0]), or the
    module as ``python -m MODULE ARGS`` would (sys.argv[0] its file, sys.path[0] the current folder).

    Returns the exit status; an uncaught exception (not ``sys.exit``) is handed to ``record``, then
    to the script's ``sys.excepthook``, as the interpreter does. Raises _NoModule when MODULE cannot
    be found."""
    main_file = script or ""
    try:
        if module:
            main_file = _module_file(module)  # a parent package that raises on import fails like the script
            sys.argv = [main_file, *args]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [main_file, *args]
            sys.path[0] = os.path.dirname(os.path.realpath(main_file))  # as `python link/to/script.py` sets it
            runpy.run_path(main_file, run_name="__main__")
    except (_NoModule, _filter.Taken):
        raise
    except SystemExit as exc:
        return _exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - report like the interpreter would
        tb = exc.__traceback__
        # Drop the bootstrap's and runpy's own frames, as `python script.py` would show none.
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != os.path.abspath(main_file):
            tb = tb.tb_next
        if not isinstance(exc, KeyboardInterrupt):
            record(exc)
        code = 130 if isinstance(exc, KeyboardInterrupt) else 1
        return _excepthook(exc, tb, code)
    return 0


def _exit_status(exc: SystemExit) -> int:
    """The status ``sys.exit(code)`` ends the interpreter with (a message is printed, status 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _excepthook(exc: BaseException, tb: object, code: int) -> int:
    """Hand the uncaught exception to ``sys.excepthook`` (the script's own, if it set one), as the
    interpreter does; a hook that calls ``sys.exit(n)`` ends with ``n``, one that raises is reported
    with the original exception, as ``python script.py`` reports it."""
    exc.__traceback__ = tb  # the default hook prints the exception's own traceback, not the one it is given
    try:
        sys.excepthook(type(exc), exc, tb)
    except SystemExit as ended:
        return _exit_status(ended)
    except BaseException as failed:  # noqa: BLE001 - the interpreter's own words for a broken hook
        print("Error in sys.excepthook:", file=sys.stderr)
        traceback.print_exception(type(failed), failed, failed.__traceback__)
        print("\nOriginal exception was:", file=sys.stderr)
        traceback.print_exception(type(exc), exc, tb)
    return code


if __name__ == "__main__":
    if sys.argv[1] == "--describe":
        sys.exit(_flags.describe(sys.argv[2]))
    sys.exit(main(sys.argv[1]))
