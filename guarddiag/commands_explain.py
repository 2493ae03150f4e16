"""Wiring for ``guarddiag explain``: a script, a log or a run record in, the rendered guard model out."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from guarddiag.errors import InputError
from guarddiag.explain import Explanation, explain_events
from guarddiag.logparse.parser import LogParser
from guarddiag.model import script_outcome
from guarddiag.render.explain import FORMATS, render_explanation
from guarddiag.runner import RunRequest, execute
from guarddiag.store import load_run


def explain_target(target: str, fmt: str, full: bool, python: str = sys.executable) -> str:
    """Explain SCRIPT (``.py``: run it first), a LOGFILE, or a RUN.json (its log is read) in format ``fmt``."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt}: unknown format; use one of {', '.join(FORMATS)}")
    explanation, notes = explain_path(Path(target), full, python)
    text = render_explanation(explanation, fmt)
    if notes and fmt in ("table", "markdown"):
        text += "\n" + "\n".join(notes)
    return text


def explain_path(path: Path, full: bool, python: str = sys.executable) -> tuple[Explanation, list[str]]:
    """The explanation and notes for the user (where the log is, whether the script failed)."""
    if path.suffix == ".py":
        run = execute(RunRequest(script=path, python=python, capture_output=True))
        notes = [f"torch log: {run.log_path} (the script's output is beside it)"]
        if run.status != "ok":
            notes.append(f"note: {script_outcome(run)}; the model covers what compiled before that")
        return _from_log(Path(run.log_path or ""), run.torch_version, full), notes
    if path.suffix == ".json":
        run = load_run(path)
        if not run.log_path or run.log_path == "-":
            raise InputError(f"{path}: this run record names no log file; explain the log or the script instead")
        log = Path(run.log_path)
        if log.exists() and not log.is_dir() and not log.is_file():
            # A record can name anything; reading a FIFO or a device it names would block or never end.
            raise InputError(f"{path}: the log it names ({log}) is not a regular file; explain the log or the script instead")
        return _from_log(log, run.torch_version, full), [f"torch log: {run.log_path}"]
    return _from_log(path, None, full), []


def _from_log(path: Path, torch_version: str | None, full: bool) -> Explanation:
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give a script (.py), a torch log, or a run record (.json)")
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            explanation = explain_lines(fh, torch_version, full)
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


def explain_lines(lines: Iterable[str], torch_version: str | None = None, full: bool = False) -> Explanation:
    """Parse log lines and explain them (the whole pipeline, no files)."""
    return explain_events(LogParser().parse(lines), torch_version, full)
