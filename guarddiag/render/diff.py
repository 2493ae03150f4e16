"""Compare reports: one or more :class:`~guarddiag.diff.RunDiff` (one per flip, each against
the same baseline) as a terminal table, JSON, YAML or Markdown. No I/O here.

JSON/YAML schema versions (``schema`` key):
  guarddiag.diff/1 -- first version: ``diffs[]`` with every field and property of RunDiff,
  FunctionDelta and CauseDelta, plus ``verdict`` lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from guarddiag.diff import CauseDelta, FunctionDelta, RunDiff, verdict
from guarddiag.render.formats import render_as

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
        "incomplete": list(d.incomplete),
        "verdict": verdict(d),
        "functions": [_function_to_dict(f) for f in d.functions],
    }


def _function_to_dict(f: FunctionDelta) -> dict[str, object]:
    return {
        "name": f.name,
        "file": f.file,
        "line": f.line,
        "label": f.label,
        "status": f.status,
        "compiles_before": f.compiles_before,
        "compiles_after": f.compiles_after,
        "recompiles_before": f.recompiles_before,
        "recompiles_after": f.recompiles_after,
        "limit_hit_before": f.limit_hit_before,
        "limit_hit_after": f.limit_hit_after,
        "removed": f.removed,
        "added": f.added,
        "unchanged": f.unchanged,
        "causes": [_cause_to_dict(c) for c in f.causes],
    }


def _cause_to_dict(c: CauseDelta) -> dict[str, object]:
    return {
        "category": c.category,
        "source": c.source,
        "pattern": c.pattern,
        "subject": c.subject,
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
    return [
        [
            f.label,
            _arrow(f.compiles_before, f.compiles_after),
            _arrow(f.recompiles_before, f.recompiles_after),
            f.removed,
            f.added,
            f.unchanged,
            _limit(f),
            f.status,
        ]
        for f in d.functions
    ]


_HEADERS = ["function", "compiles", "recompiles", "removed", "added", "unchanged", "limit hit", "status"]


def _totals(d: RunDiff) -> str:
    return f"{d.recompiles_before} recompiles before, {d.recompiles_after} after ({d.removed} removed, {d.added} added)"


def _table(diffs: Sequence[RunDiff]) -> str:
    out: list[str] = []
    for d in diffs:
        if out:
            out.append("")
        out += [f"{d.before_label} -> {d.after_label}: {_totals(d)}", ""]
        if d.functions:
            out += [tabulate(_rows(d), headers=_HEADERS), ""]
        for f in d.functions:
            if not f.causes:
                continue
            out.append(f"{f.label}: {f.status}")
            for c in f.causes:
                for side in _SIDES:
                    n = getattr(c, side)
                    if n:
                        out.append(f"  {side} {n}x {c.category}: {c.subject}")
                out.append(f"      guard: {c.pattern[:160]}")
            out.append("")
        out += [f"- {line}" for line in verdict(d)]
    return "\n".join(out)


def _markdown(diffs: Sequence[RunDiff]) -> str:
    out = ["## guarddiag compare"]
    for d in diffs:
        out += ["", f"### {d.before_label} -> {d.after_label}", "", _totals(d), ""]
        rows = [[f"`{row[0]}`", *row[1:]] for row in _rows(d)]
        out += [tabulate(rows, headers=_HEADERS, tablefmt="github"), ""]
        out += [f"- {line}" for line in verdict(d)]
    return "\n".join(out) + "\n"
