"""Markdown report (for CI step summaries and issues)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tabulate import tabulate

from guarddiag.model import FunctionSummary, Run
from guarddiag.render.divergence import Shown, headline_lines, shown_functions
from guarddiag.render.escape import markdown_code, markdown_text, visible_values
from guarddiag.render.guards import guard_cost_lines, heading
from guarddiag.render.job import job_notes, process_headers, process_rows
from guarddiag.render.summary import (
    advice_notes,
    budget_lines,
    cause_group_words,
    cause_groups,
    compiles_cell,
    disagreement_lines,
    failed_sentence,
    graph_break_lines,
    group_advice_lines,
    headline,
    limit_sentence,
    near_limit_lines,
    parse_note,
    refusal_group_line,
    refusal_groups,
    run_notes,
    wants_details,
)
from guarddiag.render.words import run_compile_time_sentence, seconds, trace_line

if TYPE_CHECKING:
    from guarddiag.report import RunReport

_NOTE_FORMATS = {"outcome": "**{}**; counts cover what ran before that", "warning": "> **warning**: {}", "note": "> note: {}"}


def render(report: RunReport) -> str:
    """One run's report value as GitHub-flavoured Markdown: names in code spans, every sentence escaped
    (render.escape); with its advice, each cause group's fix hint and where it stands."""
    report = visible_values(report)
    run, advice = report.run, report.advice
    out = ["## guarddiag", "", markdown_text(headline(report)), ""]
    notes = [_NOTE_FORMATS[kind].format(markdown_text(text)) for kind, text in run_notes(report)]
    notes += [_NOTE_FORMATS["note"].format(markdown_text(text)) for text in advice_notes(advice)]
    notes += [_NOTE_FORMATS["note"].format(markdown_text(text)) for text in job_notes(run)]
    out += [*notes, ""] if notes else []
    total = run_compile_time_sentence(run)
    out += [total, ""] if total else []
    # Compile seconds per function, when torch's times are known for any (a parsed log has none).
    timed = any(f.compile_s is not None for f in run.functions)
    shown = shown_functions(run)
    rows = [[markdown_code(s.label, table=True), *_counts(run, s.function)] + ([_seconds(s)] if timed else []) for s in shown]
    refused = ["refused"] if run.stances else []
    headers = ["function", "compiles", "recompiles", "limit hit", *refused, "graph breaks"] + (["compile s"] if timed else [])
    if run.job is not None and run.job.processes:
        processes = [[_cell(v) for v in row] for row in process_rows(run)]
        out += [tabulate(processes, headers=process_headers(run.job), tablefmt="github"), ""]
    out.append(tabulate(rows, headers=headers, tablefmt="github"))
    for s in shown:
        f = s.function
        if wants_details(f, run):
            out += ["", f"### {markdown_code(s.label)}" + (" (each)" if s.folded else ""), ""]
            advised = advice.of(f) if advice is not None else None
            for g in cause_groups(f):
                out.append(f"- {g.count}x **{markdown_text(g.category)}**: {markdown_text(cause_group_words(g))}")
                out += [_advice_item(line) for line in group_advice_lines(advised, g.cause.key)]
            out += [f"- {markdown_text(failed_sentence(c))}" for c in f.failed_compiles]
            out += [f"- {markdown_text(limit_sentence(hit))}" for hit in f.limit_hits]
            out += [f"- {markdown_text(line)}" for line in graph_break_lines(f)]
            out += [f"- {markdown_text(refusal_group_line(r))}" for r in refusal_groups(f)]
            out += [f"- {markdown_text(line)}" for line in (near_limit_lines(run, f) if s.folded else budget_lines(run, f))]
    costs = guard_cost_lines(run, report.guard_costs)
    if costs:
        out += ["", "### Guard checks", "", markdown_text(heading(run)), ""]
        for line, under in costs:
            out += [f"- {markdown_text(line)}", *(f"  - {markdown_text(u)}" for u in under)]
    divergence = [markdown_text(line) for line in headline_lines(report)]
    if divergence:
        out += ["", "### Rank divergence", "", divergence[0], *(["", *(f"- {line}" for line in divergence[1:])] if divergence[1:] else [])]
    note = parse_note(report)
    if note:
        out += ["", f"> {markdown_text(note)}"]
    for line in disagreement_lines(report):  # a quote each: adjacent quoted lines would join into one paragraph
        out += ["", f"> note: {markdown_text(line)}"]
    trace = trace_line(run)
    out += ["", markdown_text(trace)] if trace else []
    return "\n".join(out) + "\n"


def _advice_item(line: str) -> str:
    """A line of a cause group's advice as a nested list item (a line indented under the one before, deeper)."""
    depth = "    " if line.startswith("  ") else "  "
    return f"{depth}- {markdown_text(line.strip())}"


def _cell(value: object) -> object:
    """A process table cell: a number as it is, text (a process label, a host, a log path) as code."""
    return markdown_code(value, table=True) if isinstance(value, str) and value else value


def _counts(run: Run, f: FunctionSummary) -> list[object]:
    refused = [f.refused_calls] if run.stances else []
    return [compiles_cell(run, f), f.recompiles, "yes" if f.limit_hit else "", *refused, len(f.graph_breaks)]


def _seconds(s: Shown) -> str:
    """A function's compile seconds; for ranks shown together, the fewest and most of them."""
    times = sorted(f.compile_s for f in s.functions if f.compile_s is not None)
    if not times:
        return ""
    return seconds(times[0]) if times[0] == times[-1] else f"{seconds(times[0])}-{seconds(times[-1])}"
