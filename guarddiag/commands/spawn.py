"""Running the script for the commands that run one (run, explain, compare, baseline, check): the
request checked before anything runs, the child started (``child/runner.py``), what it refused said,
and the run built from its folder (``buildrun.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from guarddiag.buildrun import build_run
from guarddiag.child.folders import keep_runs
from guarddiag.child.runner import (
    NO_BOOTSTRAP,
    REFUSED,
    UNSTARTABLE,
    ChildRun,
    RunRequest,
    execute,
    execute_many,
    find_interpreter,
    shared_rendezvous,
)
from guarddiag.commands.output import message
from guarddiag.errors import InputError
from guarddiag.render import child as words
from guarddiag.report import RunReport


def run_script(request: RunRequest) -> RunReport:
    """Check the request, run it, and return its report value (its record also saved in the run folder)."""
    check_request(request)
    return built(execute(request))


def run_scripts(
    requests: Sequence[RunRequest], jobs: int, on_done: Callable[[RunRequest, RunReport], None] | None = None
) -> list[RunReport]:
    """Check every request, then run them ``jobs`` at a time (child/runner.execute_many); each run's report
    value, in request order."""
    for request in requests:
        check_request(request)
    shared = shared_rendezvous(requests)
    if min(jobs, len(requests)) > 1 and shared:
        message(words.taking_turns(shared))
    return execute_many(requests, jobs, built, on_done)


def check_script(script: Path) -> None:
    """Refuse a script that is not there, or a directory, before anything runs."""
    if not script.exists():
        raise InputError(f"{script}: no such script; give the path of a Python file to run")
    if script.is_dir():
        raise InputError(f"{script}: is a directory; give the path of a Python file to run")


def check_request(request: RunRequest) -> None:
    """Refuse what cannot run before a run folder is made: a bad ``GUARDDIAG_KEEP_RUNS`` or
    ``--timeout``, a missing script, an interpreter that is not one, a flag the cached catalog refuses."""
    keep_runs()
    if request.timeout is not None and not request.timeout > 0:  # also refuses nan
        raise InputError(f"--timeout {request.timeout}: not a number of seconds above 0; give e.g. --timeout 600")
    if request.module is None:
        check_script(request.script)
    python = _check_python(request.python)
    if request.flags:
        _precheck_flags(python, request)


def _check_python(python: str) -> str:
    found = find_interpreter(python)
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
        raise InputError(words.refused_flag(str(exc), request.label)) from None


def built(child: ChildRun) -> RunReport:
    """The report value of a child that ran the script; an error naming why when nothing of it ran."""
    if child.status == UNSTARTABLE:
        raise InputError(words.unstartable(child.request.python, child.start_error))
    if child.status == REFUSED:
        raise InputError(words.refused(child.refusal, child.request.label))
    if child.status == NO_BOOTSTRAP:
        raise InputError(words.no_bootstrap(child.request.python, child.exit_code, child.folder))
    return build_run(child)
