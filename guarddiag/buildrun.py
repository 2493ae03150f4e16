"""The run record of a finished child: each process's log read and merged (``runlogs``), what the
bootstrap and the start-up hooks wrote beside it, saved in the run folder (``store``).

The child (``child/runner.py``) only spawns and says what happened; this is where its folder becomes a
:class:`~guarddiag.model.Run`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from guarddiag.child import proctree
from guarddiag.child._site import _guarddiag_hooks as _hooks
from guarddiag.child._site import _guarddiag_process as _process
from guarddiag.child.runner import ChildRun
from guarddiag.errors import InputError
from guarddiag.guardtime import read_guard_time, with_guard_times
from guarddiag.model import Job, LateHook, Run, Unobserved
from guarddiag.render.child import unreadable_log, unsaved_record
from guarddiag.render.escape import one_line
from guarddiag.report import RunReport, run_report, save_report
from guarddiag.runlogs import read_run_logs
from guarddiag.store import late_hook_from_dict, write_failure


def build_run(child: ChildRun) -> RunReport:
    """The run of a child that ran the script (any status of proctree.wait) as its report value, its
    record also saved in its folder (from that value: the command that reports it computes nothing again)."""
    request, run_dir, meta = child.request, child.folder, child.meta
    try:
        logs = read_run_logs(run_dir, child.log_path, child.ledger_path)
    except OSError as exc:
        raise InputError(unreadable_log(run_dir, exc)) from None
    functions, measured = logs.functions, None
    if request.measure_guards:
        measured = read_guard_time(run_dir)
        if measured is not None and measured.error is None:
            functions = tuple(with_guard_times(functions, measured))
    run = Run(
        functions=functions,
        parse=logs.stats,
        torch_version=meta.get("torch_version"),
        exit_code=child.exit_code,
        source="run",
        status=child.status,
        script=None if request.script is None else str(request.script),
        argv=tuple(request.args),
        flags={n: v for n, v in request.flags},
        config=dict(meta.get("config") or {}),
        flag_notes=tuple(meta.get("flag_notes") or ()),
        torch_compiles=logs.torch_compiles,
        log_path=str(child.log_path),
        trace_path=None if child.trace_path is None else str(child.trace_path),
        duration_s=round(child.duration_s, 3),
        error=meta.get("exception"),
        error_flags=tuple(meta.get("exception_flags") or ()),
        unobserved=_unobserved(run_dir, child.sightings),
        folder_recreated=child.folder_recreated,
        late_hooks=_late_hooks(run_dir),
        module=request.module,
        job=Job("run", logs.processes) if logs.processes else None,
        stances=logs.stances,
        guards_measured=None if not request.measure_guards else measured is not None and measured.error is None,
        guards_unmeasured=None if measured is None else measured.error,
    )
    report = run_report(run)
    try:
        save_report(report, run_dir / "run.json")
    except OSError as exc:
        _unsaved(run_dir / "run.json", exc)
    return report


# Why run records could not be written, said once per command (a full disk fails every run of a compare).
_UNSAVED: set[str] = set()


def _unsaved(path: Path, exc: OSError) -> None:
    """The folder's copy of the record is not needed for the report or ``--out``: say why it is missing, go on."""
    why, fix = write_failure(exc)
    if why in _UNSAVED:
        return
    _UNSAVED.add(why)
    print(one_line(unsaved_record(path, why, fix)), file=sys.stderr)


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
