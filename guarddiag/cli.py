"""The command line: parse options, call the library, map errors to exit codes. Nothing else."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from guarddiag import __version__
from guarddiag.errors import OK, SCRIPT_FAILED, GuarddiagError, InputError, StrictParseError
from guarddiag.model import Run
from guarddiag.parse import parse_log
from guarddiag.render import FORMATS, render
from guarddiag.runner import RunRequest, execute, parse_flag
from guarddiag.store import save_run

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Diagnose torch.compile recompiles: what recompiled, why, and which flag fixes it.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

FormatOpt = Annotated[str, typer.Option("--format", "-f", help=f"Output format: {', '.join(FORMATS)}.")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the run record (versioned JSON) here.")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Fail (exit 4) on torch log lines guarddiag does not understand.")]


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt}: unknown format; use one of {', '.join(FORMATS)}")


def _finish(run: Run, fmt: str, out: Optional[Path], strict: bool) -> None:
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


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def run(
    script: Annotated[Path, typer.Argument(help="The Python script to run.")],
    args: Annotated[Optional[list[str]], typer.Argument(help="Arguments for the script (after --).")] = None,
    flag: Annotated[
        Optional[list[str]],
        typer.Option("--flag", help="Set a torch._dynamo.config key (inductor.NAME for inductor) in the child: NAME=VALUE."),
    ] = None,
    python: Annotated[str, typer.Option("--python", help="Interpreter to run the script with (needs torch only).")] = sys.executable,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop the script after this many seconds.")] = None,
    fmt: FormatOpt = "table",
    out: OutOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Run SCRIPT under torch.compile logging and report its compiles and recompiles per function."""
    _check_format(fmt)
    flags = tuple(parse_flag(f) for f in flag or [])
    request = RunRequest(script=script, args=tuple(args or ()), python=python, flags=flags, timeout=timeout)
    result = execute(request)
    _finish(result, fmt, out, strict)
    if result.status != "ok":
        typer.echo(
            f"guarddiag: {script}: the script {result.status} (exit status {result.exit_code}); "
            f"the report covers what ran before that, the torch log is in {result.log_path}",
            err=True,
        )
        raise typer.Exit(SCRIPT_FAILED)


@app.command()
def parse(
    logfile: Annotated[str, typer.Argument(help="A torch log file, or - for standard input.")],
    fmt: FormatOpt = "table",
    out: OutOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Build the same report from a torch log captured elsewhere (CI log, torchrun, a paste)."""
    _check_format(fmt)
    _finish(parse_log(logfile), fmt, out, strict)


@app.command()
def version() -> None:
    """Print guarddiag's version."""
    typer.echo(__version__)


def main() -> None:
    """Entry point: run the app; a GuarddiagError becomes one line on stderr and its exit code."""
    try:
        code = app(standalone_mode=False)
    except GuarddiagError as exc:
        typer.echo(f"guarddiag: {exc}", err=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("guarddiag: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # click's usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    sys.exit(code if isinstance(code, int) else OK)
