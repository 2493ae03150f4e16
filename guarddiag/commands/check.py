"""``guarddiag check``: gate the runs on the baseline and thresholds; print the report, write the
step summary, JUnit file and annotations the environment asks for."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from guarddiag import baseline as baseline_io
from guarddiag.child.folders import prune_after_command
from guarddiag.commands.baseline import collect_runs, record_baseline, warn
from guarddiag.commands.options import Target, check_format, command_settings, flag_options
from guarddiag.commands.output import echo, echo_annotations
from guarddiag.config import ScriptSpec, Settings
from guarddiag.errors import InputError
from guarddiag.gate import GateResult, evaluate
from guarddiag.render.gate import finding_message, render_annotations, render_check, render_junit, render_markdown
from guarddiag.report import RunReport
from guarddiag.store import write_atomic


def check_command(
    items: list[str | Target], overrides: dict[str, object], baseline_given: bool, update: bool, junit: Path | None,
    flags: list[str] | None, fmt: str, env: Mapping[str, str],
) -> int:
    """Run the checks and print the report in ``fmt``; the exit code (5 on a regression, 3 when a
    script failed). ``--update`` records the runs as the new baseline instead of gating."""
    check_format(fmt)
    config = command_settings(overrides)
    reports, specs = collect_runs(items, config, flag_options(flags, config.python), sys.stderr.isatty())
    if update:
        path = config.root / config.baseline
        record_baseline({key: report.run for key, report in reports.items()}, config, path)
        echo(f"updated {path}")
        prune_after_command()
        return 0
    output = run_check(reports, config, specs, baseline_given, junit, env, fmt)
    if output.annotations:
        echo_annotations(output.annotations, err=fmt != "table")
    echo(output.text)
    prune_after_command()  # once, after the report that names the runs' logs
    return output.result.exit_code


@dataclass(frozen=True)
class CheckOutput:
    """What ``check`` prints and writes."""

    text: str
    result: GateResult
    # guarddiag's own workflow commands (GITHUB_ACTIONS): before the table on stdout, else on stderr.
    annotations: str = ""


def run_check(
    reports: dict[str, RunReport],
    settings: Settings,
    specs: dict[str, ScriptSpec],
    baseline_given: bool,
    junit: Path | None,
    env: Mapping[str, str],
    fmt: str = "table",
) -> CheckOutput:
    """Gate the runs (each its report value, computed once: the gate and every renderer take it); write the
    step summary, JUnit file and annotations the environment asks for.

    Annotations lead the table on stdout; with another format they go to stderr, so that stdout
    stays one JSON, YAML or Markdown document (the command writes them, apart from the escaped text)."""
    path = settings.root / settings.baseline
    if path.is_dir():
        raise InputError(f"--baseline {path}: is a directory; give the baseline file (e.g. guarddiag-baseline.yaml)")
    thresholds = any(
        value is not None
        for value in (settings.max_recompiles, settings.max_refused_calls, settings.max_guards, settings.max_guard_latency_us)
    ) or any((settings.fail_on_limit_hit, settings.fail_on_new_cause, settings.fail_on_rank_divergence))
    budgets = {key: spec.max_recompiles for key, spec in specs.items()}
    guard_budgets = {key: (spec.max_guards, spec.max_guard_latency_us) for key, spec in specs.items()}
    budgeted = any(b is not None for b in budgets.values()) or any(b != (None, None) for b in guard_budgets.values())
    if path.exists():
        base = baseline_io.load(path)
    elif baseline_given or not (thresholds or budgeted):
        raise InputError(f"{path}: no baseline; create one with `guarddiag baseline` or give a threshold such as --max-recompiles 0")
    else:
        base = None
    result = evaluate(reports, base, settings, budgets, guard_budgets)
    text = render_check(result, fmt)
    # The verdict is the point of `check`: an output that cannot be written is a warning, never a new exit code.
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render_markdown(result))
        except OSError as exc:
            warn(
                f"warning: $GITHUB_STEP_SUMMARY {summary}: cannot append the summary ({exc.strerror or exc}); "
                "the report is on stdout; point it at a writable file"
            )
    if junit is not None:
        try:
            write_atomic(junit, render_junit(result))
        except OSError as exc:
            why = exc.strerror or exc
            warn(f"warning: --junit {junit}: cannot write the JUnit XML ({why}); the report is on stdout; give a writable path")
    failed = [f for f in result.findings if f.kind == "script_failed"]
    if failed:
        more = f" (and {len(failed) - 1} more script(s), see the report)" if len(failed) > 1 else ""
        warn(f"{finding_message(failed[0])}{more}; fix the script and run `guarddiag check` again")
    annotations = render_annotations(result) if env.get("GITHUB_ACTIONS") == "true" else ""
    return CheckOutput(text, result, annotations)
