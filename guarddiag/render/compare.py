"""The compare report (``guarddiag compare``): the configurations run, their counts, and each
diffed against the baseline, as a terminal table, JSON, YAML or one Markdown document. No I/O here.

JSON/YAML schema versions (``schema`` key):
  guarddiag.compare/1 -- first version: ``torch_version``, ``no_ops`` (sentences), ``runs[]`` (one
  per configuration: label, python, flags, config, status/recompiles/records per repeat, unstable),
  and ``diffs[]`` as in guarddiag.diff/1. Later keys in ``runs[]``: ``folders`` (each repeat's run
  folder), ``stdout_change`` (null, or where the configuration's output first differs from the
  baseline run's: ``line``, ``baseline``, ``variant``), ``stdout_varies`` (null, or where a repeat of the
  configuration printed something else than its first run; then no output change is said), ``rank_divergence`` (the functions the
  ranks of a distributed job compiled differently in that configuration: ``name``, ``file``, ``line``).
  Later top-level keys: ``flips`` (compare without --flag: ``planned`` and ``capped`` flips, each
  ``{flag, value}``, ``max_flips``, ``combined`` and ``combined_capped`` (lists of them run together); null
  with --flag) and ``causes[]`` (each cause of the baseline:
  ``function``, ``category``, ``source``, ``pattern``, ``subject``, ``recompiles``, ``limit_hits``, ``facts``,
  ``candidates[]`` (flag, value, effect, cost), ``skipped[]`` (flag, value, why, detail), ``not_run[]``,
  and ``outcomes[]``: every field of guarddiag.compare.FlipOutcome with ``removed``, ``keeps_compiled``
  and ``works``; see docs/record-schema.md). ``guards[]``: per configuration (``label``) and function, torch's guard
  count and latency and the listing's count, of the newest cache entry and summed over entries, with
  ``listed_change`` and ``latency_change`` against the baseline (guarddiag.guardfigures).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from tabulate import tabulate

from guarddiag.compare import CauseResult, CompareReport, NoOp, OutputChange, Unstable, VariantResult
from guarddiag.divergence import DivergenceChange
from guarddiag.flips import FlipPlan
from guarddiag.guardfigures import GuardFigures, count_change, latency_change
from guarddiag.guardfilters import is_filter
from guarddiag.model import FunctionSummary
from guarddiag.render.diff import diffs_to_dict, markdown_sections, render_diffs
from guarddiag.render.escape import markdown_code, markdown_text, visible_values
from guarddiag.render.flips import cause_lines, cause_title
from guarddiag.render.formats import render_as
from guarddiag.render.guardfilters import guard_change_words, guard_figures_note, guard_heavy_line
from guarddiag.render.words import cause_subject, function_label, micros, pattern_words, script_outcome

COMPARE_SCHEMA = "guarddiag.compare/1"
_HEADERS = ["configuration", "config in force", "recompiles", "script"]
_SHOWN_CHARS = 60  # of a differing output line


def render_compare(report: CompareReport, fmt: str) -> str:
    """The compare report in one of :data:`guarddiag.render.FORMATS`."""
    return render_as(fmt, lambda: compare_to_dict(report), lambda: _markdown(report), lambda: _table(report))


def compare_to_dict(report: CompareReport) -> dict[str, object]:
    """The JSON form of a compare report (the documented contract; ``--out`` writes it)."""
    return {
        "schema": COMPARE_SCHEMA,
        "torch_version": report.torch_version,
        "no_ops": [no_op_sentence(n) for n in report.plan.no_ops],
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
                "unstable": [unstable_sentence(u) for u in r.unstable],
                "folders": list(r.folders),
                "stdout_change": None if r.stdout_change is None else asdict(r.stdout_change),
                "stdout_varies": None if r.stdout_varies is None else asdict(r.stdout_varies),
                "rank_divergence": [_place(d.function) for d in found],
            }
            for r, found in zip(report.results, report.divergence, strict=True)
        ],
        "diffs": diffs_to_dict(report.diffs)["diffs"],
        "parallel": report.parallel,
        "flips": None if report.flips is None else _flips_to_dict(report.flips),
        "causes": [_cause_to_dict(c) for c in report.causes],
        "guards": [
            {"label": label, "function": _place(f)} | {k: v for k, v in asdict(g).items() if k != "key"} | changes
            for label, f, g, changes in _guard_entries(report)
        ],
    }


def _guard_entries(report: CompareReport) -> list[tuple[str, FunctionSummary, GuardFigures, dict[str, str]]]:
    """(configuration, function, its figures, how they moved against the baseline's), function by function."""
    if not report.guards:
        return []
    base = {g.key: g for g in report.guards[0]}
    out = []
    functions = {f.key: f for r in report.results for f in r.run.functions}
    base_torch = report.results[0].run.torch_version if report.results else None
    for key in functions:
        for r, figures in zip(report.results, report.guards, strict=True):
            g = next((x for x in figures if x.key == key), None)
            if g is None:
                continue
            b = base.get(key)
            changes = {
                "listed_change": count_change(b.listed_last if b else None, g.listed_last),
                "latency_change": latency_change(
                    b.latency_last_us if b else None, g.latency_last_us, same_torch=r.run.torch_version == base_torch
                ),
            }
            out.append((r.variant.label, functions[key], g, changes))
    return out


# Latency last (the measured lookups after it, when measured): its width changes from run to run.
_GUARD_HEADERS = ["function", "configuration", "recompiles", "guards installed", "torch count", "vs baseline", "latency"]


def _guard_rows(report: CompareReport) -> list[list[object]]:
    rows = []
    recompiles = {(r.variant.label, f.key): f.recompiles for r in report.results for f in r.run.functions}
    base_label = report.results[0].variant.label if report.results else ""
    measured = measured_guards(report)
    for label, f, g, changes in _guard_entries(report):
        rows.append([
            function_label(f, process=False),
            label,
            recompiles.get((label, f.key), 0),
            _pair(g.listed_last, g.listed_sum, g.entries),
            _pair(g.torch_count_last, g.torch_count_sum, g.entries),
            "" if label == base_label else guard_change_words(changes["listed_change"], changes["latency_change"]),
            _pair(g.latency_last_us, g.latency_sum_us, g.entries, " us"),
            *([_measured(g)] if measured else []),
        ])
    return rows


def _measured(g: GuardFigures) -> str:
    """``38.2 us (412 calls)``: the median lookup its calls paid; ``-`` where not measured."""
    if g.measured_median_us is None:
        return "-"
    return f"{micros(g.measured_median_us)} ({g.measured_calls} calls)"


def measured_guards(report: CompareReport) -> bool:
    """Whether any configuration's lookups were measured (compare --measure-guards)."""
    return any(g.measured_median_us is not None for figures in report.guards for g in figures)


def _pair(last: float | None, total: float | None, entries: int, unit: str = "") -> str:
    """``186`` for one entry, ``186 (all 3: 560)`` for several; ``-`` when not known."""
    if last is None:
        return "-"
    shown = f"{last:g}{unit}"
    return shown if entries <= 1 or total is None else f"{shown} (all {entries}: {total:g}{unit})"


def _guard_lines(report: CompareReport) -> list[str]:
    """The guard section's notes: what each figure is, and torch's noise."""
    return [guard_figures_note()] if report.guards else []


def _flips_to_dict(flips: FlipPlan) -> dict[str, object]:
    return {
        "planned": [{"flag": f, "value": v} for f, v in flips.flips],
        "capped": [{"flag": f, "value": v} for f, v in flips.capped],
        "combined": [[{"flag": f, "value": v} for f, v in c] for c in flips.combined],
        "combined_capped": [[{"flag": f, "value": v} for f, v in c] for c in flips.combined_capped],
        "max_flips": flips.max_flips,
    }


def _cause_to_dict(c: CauseResult) -> dict[str, object]:
    t = c.target
    return {
        "function": _place(t.function) | {"process": str(t.function.process)},
        "category": t.category,
        "source": t.key[1],
        "pattern": pattern_words(t.key[2]),
        "subject": cause_subject(t.cause),
        "recompiles": t.recompiles,
        "limit_hits": t.limit_hits,
        "refused_calls": t.refused,
        "facts": sorted(t.facts),
        "candidates": [asdict(x) for x in t.candidates],
        "skipped": [asdict(x) for x in t.skipped],
        "not_run": [{"flag": f, "value": v} for f, v in c.not_run],
        "outcomes": [
            asdict(o)
            | {"removed": o.removed, "served": o.served, "keeps_compiled": o.keeps_compiled, "lost_compiled_code": o.lost_compiled_code}
            | {"works": o.works}
            for o in c.outcomes
        ],
    }


def _place(f: FunctionSummary) -> dict[str, object]:
    return {"name": f.name, "file": f.file, "line": f.line}


def no_op_sentence(n: NoOp) -> str:
    """Why a flag was left out of the runs."""
    return (
        f"{n.flag} does nothing in torch {n.torch_version}: {n.reason}; not run "
        "(compare it across torch versions with --python twice)"
    )


def unstable_sentence(u: Unstable) -> str:
    """``forward (model.py:12) compiled [1, 12] times across repeats``."""
    return f"{function_label(u.function)} compiled {list(u.compiles)} times across repeats"


def _rows(report: CompareReport) -> list[list[object]]:
    return [
        [
            r.variant.label,
            ", ".join(f"{k}={v}" for k, v in r.run.config.items()) or "(defaults)",
            " / ".join(str(run.recompiles) for run in r.runs),
            r.run.status if all(run.status == "ok" for run in r.runs) else "FAILED",
        ]
        for r in report.results
    ]


def _result_notes(r: VariantResult, change: DivergenceChange | None) -> list[str]:
    """What to keep in mind about one configuration's counts: noise between repeats, a run that stopped,
    output that differs from the baseline's, what it did to the ranks' divergence (``change``, the report's)."""
    notes = [f"{r.variant.label}: {unstable_sentence(u)}; not attributed to a flag" for u in r.unstable]
    outcomes = dict.fromkeys(script_outcome(run) for run in r.runs if run.status != "ok")
    notes += [f"{r.variant.label}: {o}; its counts cover what ran before that" for o in outcomes]
    notes += [f"{r.variant.label}: {stdout_sentence(r.stdout_change)}"] if r.stdout_change else []
    notes += [f"{r.variant.label}: {varies_sentence(r.stdout_varies)}"] if r.stdout_varies else []
    return notes + ([f"{r.variant.label}: {divergence_change_sentence(change)}"] if change else [])


def _notes(report: CompareReport) -> list[str]:
    """Each configuration's notes (:func:`_result_notes`), in the order of its results."""
    return [note for r, change in zip(report.results, report.divergence_changes, strict=True) for note in _result_notes(r, change)]


def divergence_change_sentence(change: DivergenceChange) -> str:
    """``rank divergence: removes it from forward (model.py:30); leaves it in step (model.py:50)``."""
    parts = [
        f"{verb} {', '.join(function_label(f, process=False) for f in functions)}"
        for verb, functions in (("removes it from", change.removed), ("adds it to", change.added), ("leaves it in", change.left))
        if functions
    ]
    return "rank divergence (ranks that compile a function differently): " + "; ".join(parts)


def stdout_sentence(change: OutputChange) -> str:
    """``stdout differs from the baseline run's (first difference at line 3: ...): the flip may change ...``."""
    return (
        f"stdout differs from the baseline run's (first difference at line {change.line}: "
        f"{_printed(change.baseline)} in the baseline, {_printed(change.variant)} here): "
        "the flip may change what the script does, not only how it compiles"
    )


def varies_sentence(change: OutputChange) -> str:
    """``its repeats printed different things (first difference at line 1: ...): its output is not compared``."""
    return (
        f"its repeats printed different things (first difference at line {change.line}: {_printed(change.baseline)}, then "
        f"{_printed(change.variant)}): its output is compared with no other configuration's"
    )


def _printed(line: str | None) -> str:
    if line is None:
        return "nothing"
    return repr(line if len(line) <= _SHOWN_CHARS else line[: _SHOWN_CHARS - 3] + "...")


def folder_lines(report: CompareReport) -> list[str]:
    """``baseline: .guarddiag/runs/<id>``: where each configuration's log, record and output are."""
    return [f"{r.variant.label}: {', '.join(r.folders)}" for r in report.results if r.folders]


def plan_lines(report: CompareReport) -> list[str]:
    """compare without --flag: what the plan found to try, under the headline."""
    flips = report.flips
    if flips is None:
        return []
    if report.results and report.results[0].run.status != "ok":
        return ["the baseline run did not finish: no flips planned from its causes"]
    heavy = [guard_heavy_line(v, False) for f, v in flips.flips if is_filter(f)]
    heavy += [guard_heavy_line(v, True) for f, v in flips.capped if is_filter(f)]
    if not flips.targets:
        if heavy:
            return ["the baseline recompiled nothing, hit no recompile limit and had no call a stance refused", *heavy]
        return ["the baseline recompiled nothing, hit no recompile limit and had no call a stance refused: no cause to remove, no flip run"]
    n = len(flips.targets)
    causes = f"{n} cause{'s' if n != 1 else ''} in the baseline"
    if not flips.configurations:
        return [f"{causes}; no config flip answers {'them' if n != 1 else 'it'} in this torch: nothing run"]
    runs, capped = len(flips.configurations), len(flips.capped) + len(flips.combined_capped)
    parts = [f"{len(flips.combined)} of them the settings of a hint, run together"] if flips.combined else []
    parts += ["one run each"] + ([f"{capped} more over --max-flips {flips.max_flips}, not run"] if capped else [])
    line = f"{causes}; {runs} config flip{'s' if runs != 1 else ''} run ({'; '.join(parts)})"
    times = "compile times are each run's own, compiled without torch's compile caches"
    if report.parallel > 1:
        times += f": the baseline ran alone, the flips {report.parallel} at a time on shared cores (--jobs 1 runs each alone)"
    return [line, *heavy, times]


def _table(report: CompareReport) -> str:
    report = visible_values(report)
    out = [f"guarddiag compare (torch {report.torch_version})"]
    out += plan_lines(report)
    out += [f"note: {no_op_sentence(n)}" for n in report.plan.no_ops]
    if report.results:
        out += ["", tabulate(_rows(report), headers=_HEADERS)]
        out += [f"note: {note}" for note in _notes(report)]
        if report.flips is not None:
            for c in report.causes:
                out += ["", cause_title(c), *(f"  {line}" for line in cause_lines(c, report.flips.max_flips))]
        if any(report.guards):
            title = "guards per function (newest cache entry; all entries summed):"
            headers = _GUARD_HEADERS + (["measured per call"] if measured_guards(report) else [])
            out += ["", title, tabulate(_guard_rows(report), headers=headers)]
            out += [f"note: {line}" for line in _guard_lines(report)]
        out += ["", "run folders:", *(f"  {line}" for line in folder_lines(report))]
        if report.flips is None:
            out += ["", render_diffs(report.diffs, "table")]
    return "\n".join(out)


def _markdown(report: CompareReport) -> str:
    report = visible_values(report)
    out = ["## guarddiag compare", "", markdown_text(f"torch {report.torch_version}")]
    out += [markdown_text(line) for line in plan_lines(report)]
    notes = [no_op_sentence(n) for n in report.plan.no_ops]
    notes += _notes(report)
    out += ["", *(f"- note: {markdown_text(n)}" for n in notes)] if notes else []
    if report.results:
        rows = [[markdown_code(label, table=True), markdown_text(config, table=True), *rest] for label, config, *rest in _rows(report)]
        out += ["", tabulate(rows, headers=_HEADERS, tablefmt="github")]
        if report.flips is not None:
            for c in report.causes:
                lines = cause_lines(c, report.flips.max_flips)
                out += ["", f"### {markdown_text(cause_title(c))}", "", *(_markdown_line(line) for line in lines)]
        if any(report.guards):
            rows = [[markdown_text(str(c), table=True) for c in row] for row in _guard_rows(report)]
            headers = _GUARD_HEADERS + (["measured per call"] if measured_guards(report) else [])
            out += ["", "### Guards per function", "", tabulate(rows, headers=headers, tablefmt="github")]
            out += ["", *(f"- note: {markdown_text(line)}" for line in _guard_lines(report))]
        out += ["", "Run folders:", "", *(f"- {markdown_text(line)}" for line in folder_lines(report))]
        if report.flips is None:
            out += markdown_sections(report.diffs)
    return "\n".join(out) + "\n"


def _markdown_line(line: str) -> str:
    """A cause's line as a list item; an ``apply:`` line under the flip before it, nested."""
    if line.startswith("    "):
        return f"  - {markdown_text(line.strip())}"
    return f"- {markdown_text(line)}"
