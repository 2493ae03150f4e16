"""Diff reports (``guarddiag diff``, and the diffs part of ``compare``): one or more
:class:`~guarddiag.diff.RunDiff` (one per flip, each against the same baseline) as a terminal
table, JSON, YAML or Markdown, with the verdict lines that say what each change did. No I/O here.

JSON/YAML schema versions (``schema`` key):
  guarddiag.diff/1 -- first version: ``diffs[]`` with every field and property of RunDiff,
  FunctionDelta and CauseDelta, plus ``verdict`` lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from guarddiag.diff import CauseDelta, FunctionDelta, RunDiff
from guarddiag.render.escape import markdown_code, markdown_text, visible_values
from guarddiag.render.formats import render_as
from guarddiag.render.words import cause_subject, function_label, pattern_words, script_outcome

DIFF_SCHEMA = "guarddiag.diff/1"
# Which side of a cause each report line shows, in the order they are shown.
_SIDES = ("removed", "added", "unchanged")


def render_diffs(diffs: Sequence[RunDiff], fmt: str) -> str:
    """The compare report in one of :data:`guarddiag.render.FORMATS`."""
    return render_as(fmt, lambda: diffs_to_dict(diffs), lambda: _markdown(diffs), lambda: _table(diffs))


def diffs_to_dict(diffs: Sequence[RunDiff]) -> dict[str, object]:
    """The JSON form of a compare report (the documented contract)."""
    return {"schema": DIFF_SCHEMA, "diffs": [_diff_to_dict(d) for d in diffs]}


def _diff_to_dict(d: RunDiff) -> dict[str, object]:
    return {
        "before_label": d.before_label,
        "after_label": d.after_label,
        "recompiles_before": d.recompiles_before,
        "recompiles_after": d.recompiles_after,
        "removed": d.removed,
        "added": d.added,
        "incomplete": incomplete(d),
        "verdict": verdict(d),
        "functions": [_function_to_dict(f) for f in _ordered(d)],
    }


def _function_to_dict(f: FunctionDelta) -> dict[str, object]:
    return {
        "name": f.name,
        "file": f.file,
        "line": f.line,
        "label": function_label(f.function),
        "status": f.status,
        "compiles_before": f.compiles_before,
        "compiles_after": f.compiles_after,
        "recompiles_before": f.recompiles_before,
        "recompiles_after": f.recompiles_after,
        "limit_hit_before": f.limit_hit_before,
        "limit_hit_after": f.limit_hit_after,
        "refused_calls_before": f.refused_before,
        "refused_calls_after": f.refused_after,
        "removed": f.removed,
        "added": f.added,
        "unchanged": f.unchanged,
        "causes": [_cause_to_dict(c) for c in f.causes],
    }


def _subject(c: CauseDelta) -> str:
    """What one kind of cause is about; recompiles the counts imply but no event records, said as such."""
    return cause_subject(c.cause) if c.cause is not None else "recompiles with no recorded event"


def _cause_to_dict(c: CauseDelta) -> dict[str, object]:
    return {
        "category": c.category,
        "source": c.source,
        "pattern": pattern_words(c.pattern),
        "subject": _subject(c),
        "before": c.before,
        "after": c.after,
        "removed": c.removed,
        "added": c.added,
        "unchanged": c.unchanged,
    }


def _arrow(before: int | None, after: int | None) -> str:
    # "-" where the function did not compile at all in that run.
    return f"{'-' if before is None else before} -> {'-' if after is None else after}"


def _limit(f: FunctionDelta) -> str:
    if f.limit_hit_before == f.limit_hit_after:
        return "yes" if f.limit_hit_after else ""
    return f"{'yes' if f.limit_hit_before else 'no'} -> {'yes' if f.limit_hit_after else 'no'}"


def _rows(d: RunDiff) -> list[list[object]]:
    refused = _any_refused(d)
    return [
        [
            function_label(f.function),
            _arrow(f.compiles_before, f.compiles_after),
            _arrow(f.recompiles_before, f.recompiles_after),
            f.removed,
            f.added,
            f.unchanged,
            _limit(f),
            *([_arrow(f.refused_before, f.refused_after) if f.refused_before or f.refused_after else ""] if refused else []),
            f.status,
        ]
        for f in _ordered(d)
    ]


_HEADERS = ["function", "compiles", "recompiles", "removed", "added", "unchanged", "limit hit", "status"]


def _any_refused(d: RunDiff) -> bool:
    return any(f.refused_before or f.refused_after for f in d.functions)


def _headers(d: RunDiff) -> list[str]:
    """The table's columns; ``refused`` (calls a compiler stance refused to recompile) only where there are any."""
    return _HEADERS[:-1] + (["refused"] if _any_refused(d) else []) + _HEADERS[-1:]


def _totals(d: RunDiff) -> str:
    return f"{d.recompiles_before} recompiles before, {d.recompiles_after} after ({d.removed} removed, {d.added} added)"


def _table(diffs: Sequence[RunDiff]) -> str:
    diffs = visible_values(diffs)
    out: list[str] = []
    for d in diffs:
        if out:
            out.append("")
        out += [f"{d.before_label} -> {d.after_label}: {_totals(d)}", ""]
        if d.functions:
            out += [tabulate(_rows(d), headers=_headers(d)), ""]
        for f in _ordered(d):
            if not f.causes:
                continue
            out.append(f"{function_label(f.function)}: {f.status}")
            for c in f.causes:
                for side in _SIDES:
                    n = getattr(c, side)
                    if n:
                        out.append(f"  {side} {n}x {c.category}: {_subject(c)}")
                out.append(f"      guard: {pattern_words(c.pattern)[:160]}")
            out.append("")
        out += [f"- {line}" for line in verdict(d)]
    return "\n".join(out)


def _markdown(diffs: Sequence[RunDiff]) -> str:
    return "\n".join(["## guarddiag compare", *markdown_sections(diffs)]) + "\n"


def markdown_sections(diffs: Sequence[RunDiff]) -> list[str]:
    """Markdown lines of a section (``###``) per diff, for a document that has its own top heading."""
    diffs = visible_values(diffs)
    out: list[str] = []
    for d in diffs:
        out += ["", f"### {markdown_text(d.before_label)} -> {markdown_text(d.after_label)}", "", _totals(d), ""]
        rows = [[markdown_code(str(row[0]), table=True), *row[1:]] for row in _rows(d)]
        out += [tabulate(rows, headers=_headers(d), tablefmt="github"), ""]
        out += [f"- {markdown_text(line)}" for line in verdict(d)]
    return out


def _ordered(d: RunDiff) -> list[FunctionDelta]:
    """The functions biggest change first; ties by how they are named in the report."""
    return sorted(d.functions, key=lambda f: (f.order, function_label(f.function)))


def incomplete(d: RunDiff) -> list[str]:
    """``label: how it ended`` for each side whose script did not finish."""
    return [f"{label}: {script_outcome(run)}" for label, run in d.incomplete]


def verdict(d: RunDiff) -> list[str]:
    """One line per function whose recompiles changed, or one line saying nothing changed; no
    attribution at all when a side stopped early (its missing recompiles are not the flag's doing)."""
    if d.incomplete:
        return [f"no change is attributed: {x}; its counts cover only what ran before it stopped" for x in incomplete(d)]
    lines = [_verdict_line(d, f) for f in _ordered(d) if f.changed]
    if not lines:
        return [f"{d.after_label} changes no recompile ({d.recompiles_before} before, {d.recompiles_after} after)"]
    return lines


def _verdict_line(d: RunDiff, f: FunctionDelta) -> str:
    before, label = f.recompiles_before or 0, function_label(f.function)
    if f.removed:
        line = f"{d.after_label} removes {f.removed} of {before} recompiles of {label} ({_describe(f, 'removed')})"
        line += f"; adds {f.added} ({_describe(f, 'added')})" if f.added else "; adds none"
    elif f.added:
        line = f"{d.after_label} adds {f.added} {_plural(f.added)} of {label} ({_describe(f, 'added')})"
    else:
        line = f"{d.after_label} changes no recompile of {label} ({before} before, {f.recompiles_after or 0} after)"
    if f.status == "new":
        line += f"; not compiled in {d.before_label}"
    elif f.status == "gone":
        line += f"; not compiled in {d.after_label}"
    if f.limit_hit_after and not f.limit_hit_before:
        line += "; now hits the recompile limit"
    elif f.limit_hit_before and not f.limit_hit_after:
        line += "; no longer hits the recompile limit"
    if f.refused_before != f.refused_after:
        line += f"; calls a compiler stance refused to recompile: {f.refused_before} -> {f.refused_after}"
    return line


def _describe(f: FunctionDelta, side: str) -> str:
    """``value on self.layer_idx``, or ``4 value on n, 1 tensor on x`` when several kinds changed."""
    counts: dict[str, int] = {}
    for c in f.causes:
        n = getattr(c, side)
        if n:
            what = f"{c.category} on {c.source}" if c.source else f"{c.category}: {_subject(c)}"
            counts[what] = counts.get(what, 0) + n
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} {what}" for what, n in counts.items())


def _plural(n: int) -> str:
    return "recompile" if n == 1 else "recompiles"
