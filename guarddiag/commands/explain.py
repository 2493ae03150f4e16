"""Wiring for ``guarddiag explain``: a script, a log or a run record in, the rendered guard model out."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from guarddiag import shell
from guarddiag.commands.options import Target, check_format, failed_script
from guarddiag.commands.output import echo
from guarddiag.errors import INTERRUPTED, SCRIPT_FAILED, GuarddiagError, InputError
from guarddiag.explain import Explanation, GuardListings, HintChecker, explain_functions
from guarddiag.filekinds import is_run_record
from guarddiag.ids import MAIN_PROCESS, Process
from guarddiag.logparse.encoding import open_log
from guarddiag.logparse.jobdir import Layout, trace_layout
from guarddiag.model import Run
from guarddiag.pipeline import LogReader, paused_gc, read_traces, refuse_guarddiag_files
from guarddiag.render.escape import markdown_text, visible
from guarddiag.render.explain import render_explanation
from guarddiag.render.words import script_outcome

# Whose code called each function when it compiled (FunctionSummary.callers), by name, file and first line.
Callers = Mapping[tuple[str, str, int | None], tuple[str, ...]]


def explain_target(target: str, fmt: str, full: bool, python: str = sys.executable) -> str:
    """Explain SCRIPT (``.py``: run it first), a LOGFILE, or a RUN.json (its log is read) in format ``fmt``."""
    return explain_command(target, fmt, full, python)[0]


def explain_command(
    target: str | Target, fmt: str, full: bool, python: str = sys.executable, timeout: float | None = None
) -> tuple[str, Run | None]:
    """The rendered explanation, and the run when TARGET was a script that did not finish cleanly
    (the command reports it after the explanation, with the exit code of a failed script)."""
    check_format(fmt)
    explanation, notes, run = _explain_path(target if isinstance(target, Target) else Path(target), full, python, timeout)
    text = render_explanation(explanation, fmt)
    if notes and fmt in ("table", "markdown"):
        # Each note is one line; the log path and process in it come from the run or its record.
        text += "\n" + "\n".join(markdown_text(n) if fmt == "markdown" else visible(n) for n in notes)
    return text, run if run is not None and run.status != "ok" else None


def explain_main(target: str | Target, fmt: str, full: bool, python: str, timeout: float | None) -> None:
    """Print the explanation; a script that did not finish cleanly is an error after it."""
    from guarddiag.child.folders import prune_after_command

    text, failed = explain_command(target, fmt, full, python, timeout)
    echo(text)
    prune_after_command()
    if failed is not None:
        raise failed_script(target, failed, "the model covers what compiled before that")


def explain_path(path: Path, full: bool, python: str = sys.executable) -> tuple[Explanation, list[str]]:
    """The explanation and notes for the user (where the log is, whether the script failed)."""
    explanation, notes, _ = _explain_path(path, full, python, None)
    return explanation, notes


def _explain_path(
    path: Path | Target, full: bool, python: str, timeout: float | None
) -> tuple[Explanation, list[str], Run | None]:
    if isinstance(path, Target) or path.suffix == ".py":
        from guarddiag.child.runner import RunRequest  # a script only: the child process machinery
        from guarddiag.commands.spawn import run_script

        target = path if isinstance(path, Target) else Target(path, None)
        request = RunRequest(
            script=target.script, args=target.args, module=target.module, python=python, capture_output=True, timeout=timeout
        )
        run = run_script(request).run
        log, process = _compiled_log(run)
        where = f" of {process} (the script's own process compiled nothing; the log of each process is beside it)" if process else ""
        notes = [f"torch log{where}: {log} (the script's output is beside it)"]
        if run.status != "ok":
            notes.append(f"note: {script_outcome(run)}; the model covers what compiled before that")
            if not run.functions:
                raise GuarddiagError(
                    f"{target}: {script_outcome(run)} before anything compiled; the torch log is in {run.log_path}",
                    INTERRUPTED if run.status == "interrupted" else SCRIPT_FAILED,
                )
        return _from_log(log, run.torch_version, full, _checker(run), _callers(run)), notes, run
    if path.suffix == ".json" or is_run_record(path):
        from guarddiag.store import load_run

        run = load_run(path)
        if not run.log_path or run.log_path == "-":
            raise InputError(f"{path}: this run record names no log file; explain the log or the script instead")
        log = _record_log(path, run)
        if log.exists() and not log.is_dir() and not log.is_file():
            # A record can name anything; reading a FIFO or a device it names would block or never end.
            raise InputError(f"{path}: the log it names ({log}) is not a regular file; explain the log or the script instead")
        log, process = _compiled_log(run, log) if run.source == "run" else (log, MAIN_PROCESS)
        where = f" of {process} (the script's own process compiled nothing)" if process else ""
        return _from_log(log, run.torch_version, full, _checker(run), _callers(run)), [f"torch log{where}: {log}"], None
    return _from_log(path, None, full, _checker(None)), [], None


def _record_log(record: Path, run: Run) -> Path:
    """The torch log a record's guards are read from: the one it names, else ``torch.log`` beside a
    ``run.json`` (a run folder copied or moved whole). Where neither is there, the error says what is
    missing and how to get it back: the record keeps counts and causes, not the guards of each compile."""
    log = Path(run.log_path or "")
    if log.exists():
        return log
    beside = record.parent / "torch.log"
    if record.name == "run.json" and beside.is_file():
        return beside
    if run.source != "run" or (run.script is None and run.module is None):
        again = "explain that log again where it is kept (guarddiag explain LOGFILE)"
    else:
        again = f"run the script again: {_rerun(run)}"
    raise InputError(
        f"{record}: its torch log {log} is gone, and explain reads each compile's guards from it (the record keeps counts "
        f"and causes only); a run folder is removed once newer runs pass GUARDDIAG_KEEP_RUNS (20; 0 keeps all) or by "
        f"`guarddiag clean`; {again}"
    )


def _rerun(run: Run) -> str:
    """The command that makes a record's run again with its log kept, as a user types it."""
    target = ["-m", run.module] if run.module else [str(run.script)]
    args = [*target, *(["--", *run.argv] if run.argv and not run.module else run.argv)]
    if any("\x00" in w for w in args):
        args = ["SCRIPT"]  # a NUL no shell word holds (only a forged record has one)
    if not run.flags:
        return shell.join(["guarddiag", "explain", *args])
    flags = [part for name, value in run.flags.items() for part in ("--flag", f"{name}={value}")]
    return f"{shell.join(['guarddiag', 'run', *flags, '--out', 'run.json', *args])}, then guarddiag explain run.json"


def _compiled_log(run: Run, main: Path | None = None) -> tuple[Path, Process]:
    """The log to explain: the script's own process's (``main``, else the one the run names), or when
    that compiled nothing, the first process of the run that did (rank 0 of a torchrun job first), with its name."""
    main = main or Path(run.log_path or "")
    compiled = {f.process for f in run.functions}
    if MAIN_PROCESS in compiled or not compiled:
        return main, MAIN_PROCESS
    from guarddiag.runlogs import process_logs

    first = next((p for p in process_logs(main.parent) if p.name in compiled), None)
    return (first.path, first.name) if first else (main, MAIN_PROCESS)


def _checker(run: Run | None) -> HintChecker:
    """Where each config hint stands for this run's script: what compares of it measured (guarddiag.verdicts);
    for a log (no run), not verified, with the compare to run on its script."""
    from guarddiag.verdicts import NO_VERDICTS, check_hints, load_verdicts

    verdicts = load_verdicts(run) if run is not None else NO_VERDICTS
    return lambda hints, f: check_hints(hints, f, verdicts, run)


def _callers(run: Run) -> Callers:
    """Whose code called each function of the run when it compiled: what its ledger saw, which a log does not show."""
    return {(f.name, f.file, f.line): f.callers for f in run.functions if f.callers and not f.process}


def _from_log(
    path: Path, torch_version: str | None, full: bool, checks: HintChecker | None = None, callers: Callers | None = None
) -> Explanation:
    traces = trace_layout([str(path)])
    if traces is not None:
        return _from_traces(path, traces, torch_version, full, checks)
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give a script (.py), a torch log, or a run record (.json)")
    refuse_guarddiag_files([str(path)])
    try:
        with open_log(path) as fh:
            explanation = explain_lines(fh, torch_version, full, checks, callers)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; give a script (.py), a torch log, or a run record (.json)") from None
    except PermissionError:
        raise InputError(f"{path}: cannot be read (permission denied)") from None
    if not explanation.functions:
        raise InputError(
            f"{path}: no compiled function in this log; capture it with TORCH_LOGS=dynamo,guards,recompiles,graph_breaks "
            "(or give the script to `guarddiag explain`)"
        )
    return explanation


def _from_traces(path: Path, plan: Layout, torch_version: str | None, full: bool, checks: HintChecker | None) -> Explanation:
    """A TORCH_TRACE file or folder explained: every process's guard trees, read as a log's listings are."""
    listings = GuardListings()
    with paused_gc():
        read = read_traces(plan, guards=None, locations=False, on_event=listings.add)
        if not read.functions:
            raise InputError(f"{path}: no compiled function in this TORCH_TRACE; give the trace of a run that compiled")
        version = torch_version or (read.versions[0] if len(read.versions) == 1 else None)
        return explain_functions(list(read.functions), listings, version, full, checks)


def explain_lines(
    lines: Iterable[str],
    torch_version: str | None = None,
    full: bool = False,
    checks: HintChecker | None = None,
    callers: Callers | None = None,
) -> Explanation:
    """Parse log lines and explain them (the whole pipeline, no files); ``callers``: whose code called each
    function when it compiled, by name, file and line, where a run saw it."""
    listings = GuardListings()
    # Every guard of every listing, without the user-code locations explain never shows.
    reader = LogReader(guards=None, locations=False, on_event=listings.add)
    with paused_gc():
        functions, _ = reader.read(lines).result()
        if callers:
            functions = [replace(f, callers=callers.get((f.name, f.file, f.line), f.callers)) for f in functions]
        return explain_functions(functions, listings, torch_version, full, checks)
