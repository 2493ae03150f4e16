"""``guarddiag compare``: run a script with and without config flips, diff each against the baseline."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from guarddiag.child.folders import prune_after_command
from guarddiag.child.runner import STDOUT_NAME, RunRequest
from guarddiag.commands.options import Target, check_format
from guarddiag.commands.output import echo, message
from guarddiag.commands.run import run_listings
from guarddiag.commands.spawn import check_script, run_scripts
from guarddiag.compare import (
    ComparePlan,
    OutputChange,
    Variant,
    VariantResult,
    build_report,
    first_difference,
    flip_variants,
    plan_compare,
    unstable_functions,
)
from guarddiag.errors import SCRIPT_FAILED, GuarddiagError, InputError
from guarddiag.flags import Catalog, load_catalog
from guarddiag.flips import MAX_FLIPS, FlipPlan, plan_flips, torch_version_tuple
from guarddiag.guardfilters import guard_heavy_flips
from guarddiag.model import Run
from guarddiag.render.compare import render_compare
from guarddiag.render.words import script_outcome
from guarddiag.report import RunReport
from guarddiag.store import write_atomic, write_failure
from guarddiag.verdicts import hinted_combinations, hinted_flips, keep_verdicts


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
    max_flips: int = MAX_FLIPS,
    measure_guards: bool = False,
) -> None:
    """Run every configuration, print the report once built, write it as JSON to ``out``, keep what each
    flip did to each cause for later ``run`` and ``explain`` reports; runs that did not finish cleanly
    are an error after the report."""
    check_format(fmt)
    options = CompareOptions(jobs, repeat, timeout, sys.stderr.isatty(), max_flips, measure_guards=measure_guards)
    plan, results, catalog, flips = run_compare(target, specs, pythons, combined, options)
    runs = sum(len(r.runs) for r in results[1:]) if flips is not None else sum(len(r.runs) for r in results)
    report = build_report(plan, results, catalog, flips, min(options.jobs or os.cpu_count() or 1, max(runs, 1)))
    echo(render_compare(report, fmt))
    if out is not None:
        try:
            write_atomic(out, render_compare(report, "json") + "\n")
        except OSError as exc:
            raise InputError(
                f"--out {out}: cannot write the compare report ({write_failure(exc)[0]}); the runs are kept in .guarddiag/runs/"
            ) from None
    keep_verdicts(report)
    prune_after_command()  # once, now that the report has read every run's folder
    failed = [r for res in results for r in res.runs if r.status != "ok"]
    if failed:
        raise GuarddiagError(
            f"{len(failed)} of the runs did not finish cleanly (first: {script_outcome(failed[0])}); "
            f"their output is in {Path(failed[0].log_path or '.').parent}",
            SCRIPT_FAILED,
        )


@dataclass(frozen=True)
class CompareOptions:
    """How the runs are made: ``jobs`` at a time, each configuration ``repeat`` times, each stopped after
    ``timeout``; ``progress`` lines on stderr; at most ``max_flips`` flips planned without ``--flag``;
    ``env``: set in each run's environment; ``measure_guards``: each run measures its cache lookups."""

    jobs: int | None = None
    repeat: int = 1
    timeout: float | None = None
    progress: bool = False
    max_flips: int = MAX_FLIPS
    env: tuple[tuple[str, str], ...] = ()
    measure_guards: bool = False


# compare without --flag reports each flip's compile seconds beside the baseline's: every run compiles
# without torch's compile caches (inductor's FX graph cache and the others), else a baseline that hits
# the cache of an earlier run would look cheap beside flips that compile new graphs.
COLD_COMPILES = (("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1"), ("TORCH_COMPILE_FORCE_DISABLE_CACHES", "1"))


def run_compare(
    target: Target, specs: list[str], pythons: list[str], combined: bool, options: CompareOptions
) -> tuple[ComparePlan, list[VariantResult], Catalog, FlipPlan | None]:
    """Plan, run every configuration (``repeat`` times each, in parallel), and group the runs. Without
    ``--flag`` (one interpreter), the baseline runs first, and the flips its causes call for after it."""
    if target.script is not None:
        check_script(target.script)
    if len(pythons) == 2 and specs:
        raise InputError("--flag goes with one --python; with two, compare runs the same script in both environments")
    catalog = load_catalog(pythons[0], options.timeout)
    plan = plan_compare(catalog, specs, combined, pythons)
    if specs or len(pythons) == 2:
        if not plan.variants:
            return plan, [], catalog, None
        return plan, _with_output_changes(_run(target, [plan.baseline, *plan.variants], options)), catalog, None
    if options.progress:
        message(f"running the baseline of {target} to find its causes ({options.repeat}x)")
    cold = replace(options, env=COLD_COMPILES)
    (baseline,) = _run(target, [plan.baseline], cold)
    listings = run_listings(baseline.run) if baseline.run.status == "ok" else None
    flips = (
        plan_flips(
            catalog, baseline.run, options.max_flips, hinted_flips(baseline.run, listings), hinted_combinations(baseline.run, listings)
        )
        if baseline.run.status == "ok"
        else FlipPlan((), ())
    )
    flips = _with_guard_filter(flips, catalog, baseline.run)
    plan = replace(plan, variants=flip_variants(flips, plan.baseline.python))
    results = [baseline, *_run(target, list(plan.variants), cold)] if plan.variants else [baseline]
    return plan, _with_output_changes(results), catalog, flips


def _with_guard_filter(flips: FlipPlan, catalog: Catalog, baseline: Run) -> FlipPlan:
    """The plan with a guard filter among its flips when the baseline's guards are heavy (guardfilters.guard_heavy_flips)."""
    if baseline.status != "ok":
        return flips
    newest = [m.guard_count for f in baseline.functions for m in f.torch_metrics[-1:]]
    extra = [c for c in guard_heavy_flips(torch_version_tuple(catalog.torch_version), newest) if c not in flips.flips]
    if not extra:
        return flips
    if len(flips.flips) + len(flips.combined) >= flips.max_flips:
        return replace(flips, capped=(*flips.capped, *extra))
    return replace(flips, flips=(*flips.flips, *extra))


def _run(target: Target, variants: list[Variant], options: CompareOptions) -> list[VariantResult]:
    """Each configuration ``repeat`` times, ``jobs`` at a time, grouped by configuration."""
    repeat = options.repeat
    requests = [
        RunRequest(
            script=target.script, args=target.args, python=v.python, flags=v.flags, timeout=options.timeout, capture_output=True,
            label=v.label, module=target.module, env=options.env, measure_guards=options.measure_guards,
        )
        for v in variants
        for _ in range(repeat)
    ]
    total = len(requests)
    done = [0]

    def report(request: RunRequest, finished: RunReport) -> None:
        done[0] += 1
        if options.progress:
            run = finished.run
            message(f"  [{done[0]}/{total}] {request.label}: {run.status} in {run.duration_s:.1f}s")

    jobs = options.jobs or os.cpu_count() or 1
    if options.progress:
        message(f"running {len(variants)} configurations x {repeat} of {target} ({jobs} at a time)")
    reports = run_scripts(requests, jobs, report)
    results = []
    for i, variant in enumerate(variants):
        group = tuple(reports[i * repeat : (i + 1) * repeat])
        results.append(VariantResult(variant, group, unstable_functions(tuple(r.run for r in group)) if repeat > 1 else ()))
    return results


def _with_output_changes(results: list[VariantResult]) -> list[VariantResult]:
    """Each configuration's first run's output compared with the baseline's (the first result), unless the
    repeats of either printed different things (a time, a random number): then no flip is said to change it."""
    results = [replace(r, stdout_varies=_varies(r)) for r in results]
    baseline_out = _stdout(results[0].run)
    for i, result in enumerate(results[1:], 1):
        out = _stdout(result.run)
        if baseline_out is not None and out is not None and results[0].stdout_varies is None and result.stdout_varies is None:
            results[i] = replace(result, stdout_change=first_difference(baseline_out, out), stdout_compared=True)
    return results


def _varies(result: VariantResult) -> OutputChange | None:
    """Where a repeat of the configuration first printed something else than its first run (None: all the same)."""
    first = _stdout(result.run)
    for run in result.runs[1:]:
        out = _stdout(run)
        if first is not None and out is not None and (change := first_difference(first, out)) is not None:
            return change
    return None


def _stdout(run: Run) -> str | None:
    """What the run's script printed (compare captures it in the run folder); None when not kept."""
    if not run.log_path:
        return None
    try:
        return (Path(run.log_path).parent / STDOUT_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
