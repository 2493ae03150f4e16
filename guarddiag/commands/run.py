"""``guarddiag run``: run a script under torch.compile logging and report it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer

from guarddiag.commands.options import check_format, failed_script, flag_options
from guarddiag.errors import InputError, StrictParseError
from guarddiag.model import Run


def run_command(
    script: Path, args: Sequence[str], flags: list[str] | None, python: str, timeout: float | None, fmt: str, out: Path | None,
    strict: bool,
) -> None:
    """Run SCRIPT, print its report; a script that did not finish cleanly is an error after the report."""
    from guarddiag.child.runner import RunRequest, execute
    check_format(fmt)
    request = RunRequest(script=script, args=tuple(args), python=python, flags=flag_options(flags, python), timeout=timeout)
    result = execute(request)
    # A failed script is the bigger news: --strict's complaint about unknown lines waits for a clean run.
    finish(result, fmt, out, strict and result.status == "ok")
    if result.status != "ok":
        raise failed_script(script, result, "the report covers what ran before that")


def finish(run: Run, fmt: str, out: Path | None, strict: bool) -> None:
    """Save the record (``--out``), print the report, then complain under ``--strict`` about unknown lines."""
    from guarddiag.render import render
    from guarddiag.store import save_run

    if out is not None:
        try:
            save_run(run, out)
        except OSError as exc:
            raise InputError(f"{out}: cannot write the run record ({exc.strerror}); pick a writable path") from None
    typer.echo(render(run, fmt))
    if strict and run.parse.unrecognized:
        raise StrictParseError(
            f"--strict: {run.parse.unrecognized} torch log lines were not understood, "
            f"first: {run.parse.unrecognized_samples[0][:120]!r}; drop --strict to accept them"
        )
