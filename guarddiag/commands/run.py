"""``guarddiag run``: run a script under torch.compile logging and report it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from guarddiag.commands.options import Target, check_format, failed_script, flag_options
from guarddiag.commands.output import echo
from guarddiag.errors import InputError, StrictParseError
from guarddiag.model import Guard, Run

if TYPE_CHECKING:
    from guarddiag.report import RunReport
    from guarddiag.verdicts import RunAdvice


def run_command(
    target: Target, flags: list[str] | None, python: str, timeout: float | None, fmt: str, out: Path | None, strict: bool,
    trace: bool = False, measure_guards: bool = False, guard_filter: str | None = None,
) -> None:
    """Run the script or module, print its report; one that did not finish cleanly is an error after the report.
    ``trace``: keep a TORCH_TRACE folder in the run folder too; ``measure_guards``: measure each call's cache lookup;
    ``guard_filter``: a torch.compiler helper every compile gets."""
    from guarddiag.child.folders import prune_after_command
    from guarddiag.child.runner import RunRequest
    from guarddiag.commands.spawn import run_script
    from guarddiag.guardfilters import filter_config

    check_format(fmt)
    chosen = flag_options(flags, python) + ((filter_config(guard_filter),) if guard_filter else ())
    request = RunRequest(
        script=target.script, args=target.args, python=python, flags=chosen, timeout=timeout, module=target.module,
        trace=trace, measure_guards=measure_guards,
    )
    report = run_script(request)
    result = report.run
    # A failed script is the bigger news: --strict's complaint about unknown lines waits for a clean run.
    finish(replace(report, advice=advise(result)), fmt, out, strict and result.status == "ok")
    prune_after_command()
    if result.status != "ok":
        raise failed_script(target, result, "the report covers what ran before that")


def advise(run: Run) -> RunAdvice:
    """Each cause group's fix hint, decided from the run log's guard listings as explain decides it, and
    where it stands for this script: what compares of it measured. Only a run that recompiled reads its
    log again (a hint is for a cause)."""
    from guarddiag.verdicts import load_verdicts, run_advice

    return run_advice(run, load_verdicts(run), run_listings(run))


def run_listings(run: Run) -> Mapping[str, Mapping[int, tuple[Guard, ...]]] | None:
    """The guard listings of the run's own log, by frame; None when nothing recompiled or the log is not there."""
    from guarddiag.explain import listings_of
    from guarddiag.logparse.encoding import open_log

    if not run.log_path or not any(f.recompiles or f.limit_hits for f in run.functions):
        return None
    try:
        with open_log(Path(run.log_path)) as fh:
            return listings_of(fh).by_frame
    except OSError:
        return None


def finish(report: RunReport, fmt: str, out: Path | None, strict: bool) -> None:
    """Save the record (``--out``) and print the report (with its advice: each cause's fix hint), both from
    the one report value, then complain under ``--strict`` about unknown lines."""
    from guarddiag.render import render
    from guarddiag.report import save_report
    from guarddiag.store import write_failure

    run = report.run
    if out is not None:
        try:
            save_report(report, out)
        except OSError as exc:
            why, fix = write_failure(exc)
            raise InputError(f"{out}: cannot write the run record ({why}); {fix or 'pick a writable path'}") from None
    echo(render(report, fmt))
    if strict and run.parse.unrecognized:
        raise StrictParseError(
            f"--strict: {run.parse.unrecognized} torch log lines were not understood, "
            f"first: {run.parse.unrecognized_samples[0][:120]!r}; drop --strict to accept them"
        )
