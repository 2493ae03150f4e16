"""Markdown report (for CI step summaries and issues)."""

from __future__ import annotations

from tabulate import tabulate

from guarddiag.model import FunctionSummary, Run
from guarddiag.render.divergence import Shown, headline_lines, shown_functions
from guarddiag.render.job import job_notes, process_headers, process_rows
from guarddiag.render.summary import (
    budget_lines,
    cause_groups,
    compiles_cell,
    failed_sentence,
    headline,
    limit_sentence,
    near_limit_lines,
    parse_note,
    run_notes,
    wants_details,
)
from guarddiag.render.words import run_compile_time_sentence, seconds

_NOTE_FORMATS = {"outcome": "**{}**; counts cover what ran before that", "warning": "> **warning**: {}", "note": "> note: {}"}


def render(run: Run) -> str:
    """The run as GitHub-flavoured Markdown."""
    out = ["## guarddiag", "", headline(run), ""]
    notes = [_NOTE_FORMATS[kind].format(text) for kind, text in run_notes(run)]
    notes += [_NOTE_FORMATS["note"].format(text) for text in job_notes(run)]
    out += [*notes, ""] if notes else []
    total = run_compile_time_sentence(run)
    out += [total, ""] if total else []
    # Compile seconds per function, when torch's times are known for any (a parsed log has none).
    timed = any(f.compile_s is not None for f in run.functions)
    shown = shown_functions(run)
    rows = [[f"`{s.label}`", *_counts(run, s.function)] + ([_seconds(s)] if timed else []) for s in shown]
    headers = ["function", "compiles", "recompiles", "limit hit", "graph breaks"] + (["compile s"] if timed else [])
    if run.job is not None and run.job.processes:
        out += [tabulate(process_rows(run), headers=process_headers(run.job), tablefmt="github"), ""]
    out.append(tabulate(rows, headers=headers, tablefmt="github"))
    for s in shown:
        f = s.function
        if wants_details(f):
            out += ["", f"### `{s.label}`" + (" (each)" if s.folded else ""), ""]
            out += [f"- {g.count}x **{g.category}**: {g.subject}" for g in cause_groups(f)]
            out += [f"- {failed_sentence(c)}" for c in f.failed_compiles]
            out += [f"- {limit_sentence(hit)}" for hit in f.limit_hits]
            out += [f"- {line}" for line in (near_limit_lines(run, f) if s.folded else budget_lines(run, f))]
    divergence = [_text(line) for line in headline_lines(run)]
    if divergence:
        out += ["", "### Rank divergence", "", divergence[0], *(["", *(f"- {line}" for line in divergence[1:])] if divergence[1:] else [])]
    note = parse_note(run)
    if note:
        out += ["", f"> {note}"]
    return "\n".join(out) + "\n"


def _text(line: str) -> str:
    """A line of plain words for Markdown: ``<`` outside code spans escaped, or a viewer takes
    ``<lambda>`` for an HTML tag and drops it."""
    parts = line.split("`")
    return "`".join(p.replace("<", "&lt;") if i % 2 == 0 else p for i, p in enumerate(parts))


def _counts(run: Run, f: FunctionSummary) -> list[object]:
    return [compiles_cell(run, f), f.recompiles, "yes" if f.limit_hit else "", len(f.graph_breaks)]


def _seconds(s: Shown) -> str:
    """A function's compile seconds; for ranks shown together, the fewest and most of them."""
    times = sorted(f.compile_s for f in s.functions if f.compile_s is not None)
    if not times:
        return ""
    return seconds(times[0]) if times[0] == times[-1] else f"{seconds(times[0])}-{seconds(times[-1])}"
