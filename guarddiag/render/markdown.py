"""Markdown report (for CI step summaries and issues)."""

from __future__ import annotations

from tabulate import tabulate

from guarddiag.model import Run
from guarddiag.render.summary import (
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

_NOTE_FORMATS = {"outcome": "**{}**; counts cover what ran before that", "warning": "> **warning**: {}", "note": "> note: {}"}


def render(run: Run) -> str:
    """The run as GitHub-flavoured Markdown."""
    out = ["## guarddiag", "", headline(run), ""]
    notes = [_NOTE_FORMATS[kind].format(text) for kind, text in run_notes(run)]
    out += [*notes, ""] if notes else []
    rows = [
        [f"`{function_label(f)}`", compiles_cell(run, f), f.recompiles, "yes" if f.limit_hit else "", len(f.graph_breaks)]
        for f in sorted(run.functions, key=lambda f: (-f.recompiles, f.name))
    ]
    out.append(tabulate(rows, headers=["function", "compiles", "recompiles", "limit hit", "graph breaks"], tablefmt="github"))
    for f in run.functions:
        if wants_details(f):
            out += ["", f"### `{function_label(f)}`", ""]
            out += [f"- {g.count}x **{g.category}**: {g.subject}" for g in cause_groups(f)]
            out += [f"- {failed_sentence(c)}" for c in f.failed_compiles]
            out += [f"- {limit_sentence(hit)}" for hit in f.limit_hits]
    note = parse_note(run)
    if note:
        out += ["", f"> {note}"]
    return "\n".join(out) + "\n"
