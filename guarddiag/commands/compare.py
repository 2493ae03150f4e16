"""``guarddiag compare``: run a script with and without config flips, diff each against the baseline."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from guarddiag.child.folders import prune_after_command
from guarddiag.child.runner import STDOUT_NAME, RunRequest, check_script, execute_many
from guarddiag.commands.options import Target, check_format
from guarddiag.commands.output import echo, message
from guarddiag.compare import ComparePlan, VariantResult, build_report, first_difference, plan_compare, unstable_functions
from guarddiag.errors import SCRIPT_FAILED, GuarddiagError, InputError
from guarddiag.flags import Catalog, load_catalog
from guarddiag.model import Run
from guarddiag.render.compare import render_compare
from guarddiag.render.words import script_outcome
from guarddiag.store import write_atomic, write_failure


def compare_command(
    target: Target,
    specs: list[str],
    pythons: list[str],
    combined: bool,
    jobs: int | None,
    repeat: int,
    timeout: float | None,
    fmt: str,
    out: Path | None,
) -> None:
    """Run every configuration, print the report once built, write it as JSON to ``out``; runs that
    did not finish cleanly are an error after the report."""
    check_format(fmt)
    plan, results, catalog = run_compare(target, specs, pythons, combined, jobs, repeat, timeout, sys.stderr.isatty())
    report = build_report(plan, results, catalog)
    echo(render_compare(report, fmt))
    if out is not None:
        try:
            write_atomic(out, render_compare(report, "json") + "\n")
        except OSError as exc:
            raise InputError(
                f"--out {out}: cannot write the compare report ({write_failure(exc)[0]}); the runs are kept in .guarddiag/runs/"
            ) from None
    prune_after_command()  # once, now that the report has read every run's folder
    failed = [r for res in results for r in res.runs if r.status != "ok"]
    if failed:
        raise GuarddiagError(
            f"{len(failed)} of the runs did not finish cleanly (first: {script_outcome(failed[0])}); "
            f"their output is in {Path(failed[0].log_path or '.').parent}",
            SCRIPT_FAILED,
        )


def run_compare(
    target: Target,
    specs: list[str],
    pythons: list[str],
    combined: bool,
    jobs: int | None,
    repeat: int,
    timeout: float | None,
    progress: bool,
) -> tuple[ComparePlan, list[VariantResult], Catalog]:
    """Plan, run every configuration (``repeat`` times each, in parallel), and group the runs."""
    if target.script is not None:
        check_script(target.script)
    if len(pythons) == 2 and specs:
        raise InputError("--flag goes with one --python; with two, compare runs the same script in both environments")
    catalog = load_catalog(pythons[0], timeout)
    plan = plan_compare(catalog, specs, combined, pythons)
    if not plan.variants:
        return plan, [], catalog
    variants = [plan.baseline, *plan.variants]
    requests = [
        RunRequest(
            script=target.script, args=target.args, python=v.python, flags=v.flags, timeout=timeout, capture_output=True, label=v.label,
            module=target.module,
        )
        for v in variants
        for _ in range(repeat)
    ]
    total = len(requests)
    done = [0]

    def report(request: RunRequest, run: Run) -> None:
        done[0] += 1
        if progress:
            message(f"  [{done[0]}/{total}] {request.label}: {run.status} in {run.duration_s:.1f}s")

    if progress:
        message(f"running {len(variants)} configurations x {repeat} of {target} ({jobs or os.cpu_count()} at a time)")
    runs = execute_many(requests, jobs or os.cpu_count() or 1, report)
    results = []
    for i, variant in enumerate(variants):
        group = tuple(runs[i * repeat : (i + 1) * repeat])
        results.append(VariantResult(variant, group, unstable_functions(group) if repeat > 1 else ()))
    baseline_out = _stdout(results[0].run)
    for i, result in enumerate(results[1:], 1):
        out = _stdout(result.run)
        if baseline_out is not None and out is not None:
            results[i] = replace(result, stdout_change=first_difference(baseline_out, out))
    return plan, results, catalog


def _stdout(run: Run) -> str | None:
    """What the run's script printed (compare captures it in the run folder); None when not kept."""
    if not run.log_path:
        return None
    try:
        return (Path(run.log_path).parent / STDOUT_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
