"""``guarddiag baseline``: run the scripts (or read run records) and record their recompiles in a YAML
baseline to commit; ``check --update`` records through here too."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from guarddiag import baseline as baseline_io
from guarddiag.baseline import relative_file
from guarddiag.child.folders import prune_after_command
from guarddiag.child.runner import RunRequest
from guarddiag.commands.options import Target, command_settings, flag_options
from guarddiag.commands.output import echo, message
from guarddiag.commands.spawn import check_script, run_scripts
from guarddiag.config import ScriptSpec, Settings
from guarddiag.errors import SCRIPT_FAILED, InputError
from guarddiag.filekinds import is_run_record, wrong_file
from guarddiag.model import Run
from guarddiag.render.words import script_outcome
from guarddiag.report import RunReport, run_report
from guarddiag.store import load_run


def baseline_command(
    items: list[str | Target], out: Path | None, flags: list[str] | None, python: str | None, jobs: int | None, timeout: float | None
) -> None:
    """Run or read everything named (else the configured scripts) and write the baseline anew."""
    config = command_settings({"python": python, "jobs": jobs, "timeout": timeout, "baseline": str(out) if out else None})
    reports, _ = collect_runs(items, config, flag_options(flags, config.python), sys.stderr.isatty())
    runs = {key: report.run for key, report in reports.items()}
    path = config.root / config.baseline
    recorded = record_baseline(runs, config, path, anew=True)
    n = sum(len(s.functions) for s in recorded.scripts)
    echo(f"wrote {path}: {len(recorded.scripts)} scripts, {n} functions, {sum(r.recompiles for r in runs.values())} recompiles")
    prune_after_command()


def _specs(items: Sequence[str | Target], settings: Settings, flags: tuple[tuple[str, str], ...]) -> list[ScriptSpec | Path]:
    """Scripts to run (as specs) and run records to read (as paths), from the command line or the config.

    A configured script's path is relative to the project root (the settings' folder), one on the
    command line to the current folder. A script named on the command line that the config lists keeps
    its configured args, flags and budget; so does a module (-m) that the config lists with the same arguments.
    """
    configured = [replace(s, flags=s.flags + flags) for s in settings.scripts]
    if not items:
        if not configured:
            raise InputError(
                "nothing to check: give scripts or run records, or list them under `scripts` in [tool.guarddiag] of pyproject.toml"
            )
        return list(configured)
    out: list[ScriptSpec | Path] = []
    for item in items:
        if isinstance(item, Target):
            same = [s for s in configured if s.module == item.module and s.args == item.args]
            out.extend(same or [ScriptSpec("", item.args, flags, module=item.module)])
            continue
        if item.endswith(".json") or not item.endswith(".py") and is_run_record(Path(item)):
            out.append(Path(item))
            continue
        wrong = wrong_file(item, "script", leading=True) if not item.endswith(".py") and os.path.isfile(item) else None
        if wrong:  # a baseline or a report given as a script would run as Python and fail with a SyntaxError
            raise InputError(wrong)
        # A script on the command line is relative to the current folder, a configured one to the settings' folder.
        given = os.path.normpath(settings.cwd / item)
        same = [s for s in configured if not s.module and os.path.normpath(settings.root / s.path) == given]
        out.extend(same or [ScriptSpec(given, (), flags)])
    return out


def run_key(script: str | None, args: Sequence[str], root: Path, module: str | None = None) -> str:
    """How a run is named in the baseline: the script relative to the project root, then its arguments;
    a module as its command line has it: ``-m torch.distributed.run --nproc-per-node 2 train.py``."""
    return " ".join(["-m", module, *args] if module else [relative_file(script or "", root), *args])


def collect_runs(
    items: Sequence[str | Target], settings: Settings, flags: tuple[tuple[str, str], ...], progress: bool
) -> tuple[dict[str, RunReport], dict[str, ScriptSpec]]:
    """Run the scripts (in parallel) and read the records, each as its report value (a run's built once,
    with its folder's record); keyed by script path relative to the root; with the spec (its budgets) of each script run."""
    specs = _specs(items, settings, flags)
    reports: dict[str, RunReport] = {}
    budgets: dict[str, ScriptSpec] = {}
    requests = []
    def claim(key: str, what: str) -> str:
        if key in reports or key in budgets:
            raise InputError(f"{what}: a second run of `{key}`; give each script (with its arguments) once")
        return key

    for spec in specs:
        if isinstance(spec, Path):
            run = load_run(spec)
            reports[claim(run_key(run.script or str(spec), run.argv, settings.root, run.module), str(spec))] = run_report(run)
            continue
        if spec.module:
            path, key = None, claim(run_key(None, spec.args, settings.root, spec.module), f"-m {spec.module}")
        else:
            path = settings.root / spec.path
            check_script(path)
            key = claim(run_key(str(path), spec.args, settings.root), spec.path)
        budgets[key] = spec
        requests.append(
            (
                key,
                RunRequest(
                    path, spec.args, settings.python, spec.flags, settings.timeout, capture_output=True, label=key, module=spec.module
                ),
            )
        )

    def report(request: RunRequest, done: RunReport) -> None:
        if progress:
            run = done.run
            message(f"  {request.label}: {run.status}, {run.recompiles} recompiles ({run.duration_s:.1f}s)")

    results = run_scripts([r for _, r in requests], settings.jobs or os.cpu_count() or 1, report)
    for (key, _), done in zip(requests, results, strict=True):
        reports[key] = done
    return reports, budgets


def record_baseline(runs: dict[str, Run], settings: Settings, out: Path, anew: bool = False) -> baseline_io.Baseline:
    """Write a baseline of these runs, refusing when a script failed (its counts are partial).

    The baseline already at ``out`` gives its budgets and other scripts. When it cannot be read
    (corrupt, written by a newer guarddiag), ``anew`` (``guarddiag baseline -o``) replaces it with a
    warning; else (``check --update``, which must keep budgets) it is refused, naming the way out."""
    failed = [k for k, r in runs.items() if r.status != "ok"]
    if failed:
        raise InputError(
            f"{failed[0]}: {script_outcome(runs[failed[0]])}; "
            f"no baseline written (its counts would be partial); torch log: {runs[failed[0]].log_path}",
            SCRIPT_FAILED,
        )
    if out.is_dir():
        raise InputError(f"{out}: is a directory; give the baseline file to write (e.g. guarddiag-baseline.yaml)")
    try:
        previous = baseline_io.load(out) if out.exists() else None
    except InputError as exc:
        if not anew:
            raise InputError(
                f"{exc}; or write it anew from these runs with `guarddiag baseline -o {out}` (its budgets are lost)"
            ) from None
        warn(f"warning: {exc}; writing it anew from these runs: the budgets and scripts it had are not kept")
        previous = None
    new = baseline_io.from_runs(runs, settings.root, previous)
    baseline_io.save(new, out)
    return new


def warn(text: str) -> None:
    """One ``guarddiag:`` line on stderr that does not stop the command."""
    message(f"guarddiag: {text}")
