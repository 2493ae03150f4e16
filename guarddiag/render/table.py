"""Plain-text report: a per-function table, then each function's recompile causes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from guarddiag.model import FunctionSummary, Run
from guarddiag.render.columns import simple_table
from guarddiag.render.divergence import headline_lines, shown_functions
from guarddiag.render.escape import visible_values
from guarddiag.render.guards import guard_cost_lines, heading
from guarddiag.render.job import job_notes, log_line, process_headers, process_rows
from guarddiag.render.summary import (
    advice_notes,
    compiles_cell,
    disagreement_lines,
    function_detail_lines,
    headline,
    near_limit_lines,
    parse_note,
    run_notes,
    wants_details,
)
from guarddiag.render.words import run_compile_time_sentence, trace_line

if TYPE_CHECKING:
    from guarddiag.report import RunReport


def render(report: RunReport) -> str:
    """The terminal report of one run's report value (every name in it shown visibly: render.escape); with
    its advice, each cause group's fix hint and where it stands."""
    report = visible_values(report)
    run, advice = report.run, report.advice
    out = [headline(report)]
    out += [f"{text}; counts cover what ran before that" if kind == "outcome" else f"{kind}: {text}" for kind, text in run_notes(report)]
    out += [f"note: {note}" for note in advice_notes(advice)]
    out += [f"note: {text}" for text in job_notes(run)]
    total = run_compile_time_sentence(run)
    out += [total] if total else []
    if run.job is not None and run.job.processes:
        out += ["", simple_table(process_rows(run), process_headers(run.job))]
    shown = shown_functions(run)
    rows = [_row(run, s.label, s.function) for s in shown]
    if rows:
        # A run whose script used a stance that refuses to recompile shows the calls it refused.
        refused = ["refused"] if run.stances else []
        out += ["", simple_table(rows, ["function", "compiles", "recompiles", "limit hit", *refused, "graph breaks"])]
    for s in shown:
        f = s.function
        if not wants_details(f, run):
            continue
        out += ["", f"{s.label}: {f.recompiles} recompiles{' each' if s.folded else ''}"]
        # Folded ranks share their counts and causes, not their compile times (in --format json, per rank).
        advised = advice.of(f) if advice is not None else None
        if s.folded:
            out += function_detail_lines(f, advice=advised) + [f"  {line}" for line in near_limit_lines(run, f)]
        else:
            out += function_detail_lines(f, run, advised)
    costs = guard_cost_lines(run, report.guard_costs)
    if costs:
        out += ["", heading(run)]
        for line, under in costs:
            out += [f"  {line}", *(f"    {u}" for u in under)]
    divergence = headline_lines(report)
    if divergence:
        out += ["", divergence[0], *(f"  {line}" for line in divergence[1:])]
    note = parse_note(report)
    notes = [f"note: {line}" for line in ([note] if note else []) + disagreement_lines(report)]
    out += ["", *notes] if notes else []
    logs = log_line(run)
    if logs:
        out += ["", logs]
    trace = trace_line(run)
    out += [trace] if trace else []
    return "\n".join(out)


def _row(run: Run, label: str, f: FunctionSummary) -> list[object]:
    refused = [f.refused_calls or ""] if run.stances else []
    return [label, compiles_cell(run, f), f.recompiles, "yes" if f.limit_hit else "", *refused, len(f.graph_breaks) or ""]
