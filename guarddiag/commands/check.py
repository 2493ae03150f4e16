"""Wiring for ``baseline`` and ``check``: settings, runs, gate, outputs. The CLI calls only this."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from guarddiag import baseline as baseline_io
from guarddiag.baseline import relative_file
from guarddiag.child.runner import RunRequest, check_script, execute_many
from guarddiag.config import ScriptSpec, Settings
from guarddiag.errors import SCRIPT_FAILED, InputError
from guarddiag.gate import GateResult, evaluate
from guarddiag.model import Run, script_outcome
from guarddiag.render.gate import render_annotations, render_junit, render_markdown, render_text
from guarddiag.store import load_run, write_atomic


def _specs(items: Sequence[str], settings: Settings, flags: tuple[tuple[str, str], ...]) -> list[ScriptSpec | Path]:
    """Scripts to run (as specs) and run records to read (as paths), from the command line or the config.

    A script named on the command line that the config lists keeps its configured args, flags and budget.
    """
    configured = [ScriptSpec(s.path, s.args, s.flags + flags, s.max_recompiles) for s in settings.scripts]
    if not items:
        if not configured:
            raise InputError(
                "nothing to check: give scripts or run records, or list them under `scripts` in [tool.guarddiag] of pyproject.toml"
            )
        return list(configured)
    out: list[ScriptSpec | Path] = []
    for item in items:
        if item.endswith(".json"):
            out.append(Path(item))
            continue
        same = [s for s in configured if os.path.normpath(s.path) == os.path.normpath(item)]
        out.extend(same or [ScriptSpec(item, (), flags)])
    return out


def run_key(script: str, args: Sequence[str], root: Path) -> str:
    """How a run is named in the baseline: the script relative to the project root, then its arguments."""
    return " ".join([relative_file(script, root), *args])


def collect_runs(
    items: Sequence[str], settings: Settings, flags: tuple[tuple[str, str], ...], progress: bool
) -> tuple[dict[str, Run], dict[str, int | None]]:
    """Run the scripts (in parallel) and read the records; keyed by script path relative to the root."""
    specs = _specs(items, settings, flags)
    runs: dict[str, Run] = {}
    budgets: dict[str, int | None] = {}
    requests = []
    def claim(key: str, what: str) -> str:
        if key in runs or key in budgets:
            raise InputError(f"{what}: a second run of `{key}`; give each script (with its arguments) once")
        return key

    for spec in specs:
        if isinstance(spec, Path):
            run = load_run(spec)
            runs[claim(run_key(run.script or str(spec), run.argv, settings.root), str(spec))] = run
            continue
        path = settings.root / spec.path
        check_script(path)
        key = claim(run_key(str(path), spec.args, settings.root), spec.path)
        budgets[key] = spec.max_recompiles
        requests.append(
            (key, RunRequest(path, spec.args, settings.python, spec.flags, settings.timeout, capture_output=True, label=key))
        )

    def report(request: RunRequest, run: Run) -> None:
        if progress:
            print(f"  {request.label}: {run.status}, {run.recompiles} recompiles ({run.duration_s:.1f}s)", file=sys.stderr, flush=True)

    results = execute_many([r for _, r in requests], settings.jobs or os.cpu_count() or 1, report)
    for (key, _), run in zip(requests, results, strict=True):
        runs[key] = run
    return runs, budgets


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
        _warn(f"warning: {exc}; writing it anew from these runs: the budgets and scripts it had are not kept")
        previous = None
    new = baseline_io.from_runs(runs, settings.root, previous)
    baseline_io.save(new, out)
    return new


def _warn(message: str) -> None:
    """One ``guarddiag:`` line on stderr that does not stop the command."""
    print(f"guarddiag: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class CheckOutput:
    """What ``check`` prints and writes."""

    text: str
    result: GateResult


def run_check(
    runs: dict[str, Run],
    settings: Settings,
    budgets: dict[str, int | None],
    baseline_given: bool,
    junit: Path | None,
    env: Mapping[str, str],
) -> CheckOutput:
    """Gate the runs; write the step summary, JUnit file and annotations the environment asks for."""
    path = settings.root / settings.baseline
    if path.is_dir():
        raise InputError(f"--baseline {path}: is a directory; give the baseline file (e.g. guarddiag-baseline.yaml)")
    thresholds = settings.max_recompiles is not None or settings.fail_on_limit_hit or settings.fail_on_new_cause
    if path.exists():
        base = baseline_io.load(path)
    elif baseline_given or not (thresholds or any(b is not None for b in budgets.values())):
        raise InputError(f"{path}: no baseline; create one with `guarddiag baseline` or give a threshold such as --max-recompiles 0")
    else:
        base = None
    result = evaluate(runs, base, settings, budgets)
    text = render_text(result)
    # The verdict is the point of `check`: an output that cannot be written is a warning, never a new exit code.
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render_markdown(result))
        except OSError as exc:
            _warn(
                f"warning: $GITHUB_STEP_SUMMARY {summary}: cannot append the summary ({exc.strerror or exc}); "
                "the report is on stdout; point it at a writable file"
            )
    if junit is not None:
        try:
            write_atomic(junit, render_junit(result))
        except OSError as exc:
            why = exc.strerror or exc
            _warn(f"warning: --junit {junit}: cannot write the JUnit XML ({why}); the report is on stdout; give a writable path")
    failed = [f for f in result.findings if f.kind == "script_failed"]
    if failed:
        more = f" (and {len(failed) - 1} more script(s), see the report)" if len(failed) > 1 else ""
        _warn(f"{failed[0].message}{more}; fix the script and run `guarddiag check` again")
    if env.get("GITHUB_ACTIONS") == "true":
        annotations = render_annotations(result)
        if annotations:
            text = annotations + "\n" + text
    return CheckOutput(text, result)
