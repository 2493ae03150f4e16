"""Wiring for ``compare``, ``diff`` and ``flags``: library calls in, text out (the CLI stays thin)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml
from tabulate import tabulate

from guarddiag.child.runner import RunRequest, check_script, execute_many
from guarddiag.compare import ComparePlan, VariantResult, plan_compare, unstable_functions
from guarddiag.diff import RunDiff, diff_runs
from guarddiag.errors import InputError
from guarddiag.flags import Catalog, Flag, load_catalog
from guarddiag.model import Run, script_outcome
from guarddiag.render.diff import render_diffs
from guarddiag.store import load_run, write_atomic

COMPARE_SCHEMA = "guarddiag.compare/1"


def run_compare(
    script: Path,
    args: Sequence[str],
    specs: list[str],
    pythons: list[str],
    combined: bool,
    jobs: int | None,
    repeat: int,
    timeout: float | None,
    progress: bool,
) -> tuple[ComparePlan, list[VariantResult], Catalog]:
    """Plan, run every configuration (``repeat`` times each, in parallel), and group the runs."""
    check_script(script)
    if len(pythons) == 2 and specs:
        raise InputError("--flag goes with one --python; with two, compare runs the same script in both environments")
    catalog = load_catalog(pythons[0], timeout)
    plan = plan_compare(catalog, specs, combined, pythons)
    if not plan.variants:
        return plan, [], catalog
    variants = [plan.baseline, *plan.variants]
    requests = [
        RunRequest(script=script, args=tuple(args), python=v.python, flags=v.flags, timeout=timeout, capture_output=True, label=v.label)
        for v in variants
        for _ in range(repeat)
    ]
    total = len(requests)
    done = [0]

    def report(request: RunRequest, run: Run) -> None:
        done[0] += 1
        if progress:
            print(f"  [{done[0]}/{total}] {request.label}: {run.status} in {run.duration_s:.1f}s", file=sys.stderr, flush=True)

    if progress:
        print(f"running {len(variants)} configurations x {repeat} of {script} ({jobs or os.cpu_count()} at a time)", file=sys.stderr)
    runs = execute_many(requests, jobs or os.cpu_count() or 1, report)
    results = []
    for i, variant in enumerate(variants):
        group = tuple(runs[i * repeat : (i + 1) * repeat])
        results.append(VariantResult(variant, group, unstable_functions(group) if repeat > 1 else ()))
    return plan, results, catalog


def compare_report(plan: ComparePlan, results: list[VariantResult], catalog: Catalog, fmt: str) -> tuple[str, list[RunDiff]]:
    """The compare report in ``fmt``, and the diffs behind it."""
    diffs = []
    if results:
        base = results[0]
        diffs = [diff_runs(base.run, r.run, base.variant.label, r.variant.label) for r in results[1:]]
    if fmt in ("json", "yaml"):
        doc = {
            "schema": COMPARE_SCHEMA,
            "torch_version": catalog.torch_version,
            "no_ops": list(plan.no_ops),
            "runs": [
                {
                    "label": r.variant.label,
                    "python": r.variant.python,
                    "flags": dict(r.variant.flags),
                    "torch_version": r.run.torch_version,
                    "config": r.run.config,
                    "status": [run.status for run in r.runs],
                    "recompiles": [run.recompiles for run in r.runs],
                    "records": [str(Path(run.log_path).with_name("run.json")) for run in r.runs if run.log_path],
                    "unstable": list(r.unstable),
                }
                for r in results
            ],
            "diffs": json.loads(render_diffs(diffs, "json"))["diffs"] if diffs else [],
        }
        text = json.dumps(doc, indent=2) if fmt == "json" else yaml.safe_dump(doc, sort_keys=False, width=120)
        return text, diffs
    out = [f"guarddiag compare (torch {catalog.torch_version})"]
    out += [f"note: {n}" for n in plan.no_ops]
    if results:
        rows = [
            [
                r.variant.label,
                ", ".join(f"{k}={v}" for k, v in r.run.config.items()) or "(defaults)",
                " / ".join(str(run.recompiles) for run in r.runs),
                r.run.status if all(run.status == "ok" for run in r.runs) else "FAILED",
            ]
            for r in results
        ]
        out += ["", tabulate(rows, headers=["configuration", "config in force", "recompiles", "script"])]
        for r in results:
            out += [f"note: {r.variant.label}: {u}; not attributed to a flag" for u in r.unstable]
            outcomes = dict.fromkeys(script_outcome(run) for run in r.runs if run.status != "ok")
            out += [f"note: {r.variant.label}: {o}; its counts cover what ran before that" for o in outcomes]
        out += ["", render_diffs(diffs, fmt)]
    return "\n".join(out), diffs


def save_compare(text_json: str, path: Path) -> None:
    """Write the compare document (JSON) atomically."""
    write_atomic(path, text_json + "\n")


def run_diff(a: Path, b: Path, fmt: str) -> str:
    """``guarddiag diff A.json B.json``."""
    before, after = load_run(a), load_run(b)
    return render_diffs([diff_runs(before, after, a.name, b.name)], fmt)


def flags_table(catalog: Catalog, pattern: str | None, show_all: bool, fmt: str) -> str:
    """The flags of one torch, filtered by a substring; inductor flags only with --all or an inductor pattern."""
    wanted = [
        f
        for f in catalog.flags.values()
        if (pattern is None or pattern.lower() in f.name.lower())
        and (show_all or not f.name.startswith("inductor.") or (pattern or "").startswith("inductor"))
        and (show_all or not _internal(f))
    ]
    if fmt == "json":
        return json.dumps({"torch_version": catalog.torch_version, "flags": [f.__dict__ | {"env": list(f.env)} for f in wanted]}, indent=2)
    rows = []
    for f in sorted(wanted, key=lambda f: f.name):
        note = []
        if f.alias_of:
            note.append(f"alias of {f.alias_of}")
        if f.deprecated:
            note.append(f"deprecated: {f.deprecation_message or ''}".strip())
        if f.value != f.default:
            note.append(f"default {f.default!r}, set by environment")
        if f.choices:
            note.append(("one of " if f.choices_only else "or one of ") + ", ".join(repr(c) for c in f.choices))
        if f.env:
            note.insert(0, f"env {', '.join(f.env)}")
        value = repr(f.value)
        rows.append([f.name, f.type, value if len(value) < 20 else value[:17] + "...", "; ".join(note)])
    head = f"torch {catalog.torch_version}: {len(rows)} flags" + ("" if show_all else " (inductor.* and internal names with --all)")
    # Long notes (a deprecation message, a list of choices) wrap instead of making the table 200 columns wide.
    table = tabulate(rows, headers=["flag", "type", "value", "note"], maxcolwidths=[None, None, None, 48], disable_numparse=True)
    return head + "\n\n" + table


def _internal(flag: Flag) -> bool:
    """Not a setting a user tunes: a private name, a module constant (TYPE_CHECKING), or where torch is
    installed (base_dir: an absolute path as its value)."""
    name = flag.name.rpartition(".")[2]
    value = flag.value if isinstance(flag.value, str) else ""
    return name.startswith("_") or name.isupper() or value.startswith("/")
