"""Plain-text report: a per-function table, then each function's recompile causes."""

from __future__ import annotations

from guarddiag.model import Run, report_order
from guarddiag.render.columns import simple_table
from guarddiag.render.divergence import headline_lines
from guarddiag.render.job import job_notes, process_headers, process_rows
from guarddiag.render.summary import (
    compiles_cell,
    function_detail_lines,
    function_label,
    headline,
    parse_note,
    run_notes,
    wants_details,
)
from guarddiag.render.words import run_compile_time_sentence


def render(run: Run) -> str:
    """The terminal report of one run."""
    out = [headline(run)]
    out += [f"{text}; counts cover what ran before that" if kind == "outcome" else f"{kind}: {text}" for kind, text in run_notes(run)]
    out += [f"note: {text}" for text in job_notes(run)]
    total = run_compile_time_sentence(run)
    out += [total] if total else []
    if run.job is not None and run.job.processes:
        out += ["", simple_table(process_rows(run), process_headers(run.job))]
    rows = [
        [function_label(f), compiles_cell(run, f), f.recompiles, "yes" if f.limit_hit else "", len(f.graph_breaks) or ""]
        for f in sorted(run.functions, key=report_order)
    ]
    if rows:
        out += ["", simple_table(rows, ["function", "compiles", "recompiles", "limit hit", "graph breaks"])]
    for f in sorted(run.functions, key=report_order):
        if not wants_details(f):
            continue
        out += ["", f"{function_label(f)}: {f.recompiles} recompiles"]
        out += function_detail_lines(f, run)
    divergence = headline_lines(run)
    if divergence:
        out += ["", divergence[0], *(f"  {line}" for line in divergence[1:])]
    note = parse_note(run)
    if note:
        out += ["", f"note: {note}"]
    if run.log_path and run.source != "merge":
        out += ["", f"torch log: {run.log_path}"]
    return "\n".join(out)
