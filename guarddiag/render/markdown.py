"""Markdown report (for CI step summaries and issues)."""

from __future__ import annotations

from tabulate import tabulate

from guarddiag.model import Run, report_order
from guarddiag.render.divergence import headline_lines
from guarddiag.render.job import job_notes, process_headers, process_rows
from guarddiag.render.summary import (
    budget_lines,
    cause_groups,
    compiles_cell,
    failed_sentence,
    function_label,
    headline,
    limit_sentence,
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
    rows = [
        [f"`{function_label(f)}`", compiles_cell(run, f), f.recompiles, "yes" if f.limit_hit else "", len(f.graph_breaks)]
        + (["" if f.compile_s is None else seconds(f.compile_s)] if timed else [])
        for f in sorted(run.functions, key=report_order)
    ]
    headers = ["function", "compiles", "recompiles", "limit hit", "graph breaks"] + (["compile s"] if timed else [])
    if run.job is not None and run.job.processes:
        out += [tabulate(process_rows(run), headers=process_headers(run.job), tablefmt="github"), ""]
    out.append(tabulate(rows, headers=headers, tablefmt="github"))
    for f in run.functions:
        if wants_details(f):
            out += ["", f"### `{function_label(f)}`", ""]
            out += [f"- {g.count}x **{g.category}**: {g.subject}" for g in cause_groups(f)]
            out += [f"- {failed_sentence(c)}" for c in f.failed_compiles]
            out += [f"- {limit_sentence(hit)}" for hit in f.limit_hits]
            out += [f"- {line}" for line in budget_lines(run, f)]
    divergence = headline_lines(run)
    if divergence:
        out += ["", "### Rank divergence", "", divergence[0], *(["", *(f"- {line}" for line in divergence[1:])] if divergence[1:] else [])]
    note = parse_note(run)
    if note:
        out += ["", f"> {note}"]
    return "\n".join(out) + "\n"
