"""The in-process watch's words: its report (``Watch.report()``) and the budget failure's cause lines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from guarddiag.model import FunctionSummary
from guarddiag.render.escape import terminal, visible_values
from guarddiag.render.summary import function_detail_lines, function_label

if TYPE_CHECKING:
    from guarddiag.inprocess import Watch

__all__ = ["function_details", "watch_report", "watch_warnings"]


def watch_report(w: Watch) -> str:
    """Plain text: totals, then each function with recompiles or limit hits and its grouped causes."""
    functions = w.functions
    what = f" of {', '.join(sorted(w.only))}" if w.only is not None else ""
    out = [
        f"guarddiag watch{what}: {len(functions)} compiled functions, {w.compiles} compiles, "
        f"{w.recompiles} recompiles, {w.limit_hits} recompile-limit hits, {w.graph_breaks} graph breaks"
    ]
    out += watch_warnings(w)
    out += function_details(functions)
    if len(out) == 1:
        out.append("no recompiles")
    return terminal("\n".join(out))


def watch_warnings(w: Watch) -> list[str]:
    """What the counts cannot show by themselves, one line each (the log lost records under the watch)."""
    if not w.lost_log:
        return []
    return [
        f"warning: torch compiled {w.torch_compiles} times in the block but its log showed the watch fewer: "
        "the code changed torch's logging under the watch (torch._logging.set_logs, logging.disable), so the "
        "counts are torch's own and causes are missing for the compiles the log did not show"
    ]


def function_details(functions: Iterable[FunctionSummary]) -> list[str]:
    """For each function with recompiles or limit hits: a headline, then its cause groups with an example;
    each line ready for a terminal and a CI log (the budget failure goes out as pytest prints it)."""
    from guarddiag.inprocess import function_recompiles

    out: list[str] = []
    for f in sorted(visible_values(tuple(functions)), key=lambda f: (-function_recompiles(f), f.name)):
        if not f.recompile_events and not f.limit_hit and not f.failed_compiles:
            continue
        out.append(f"{function_label(f)}: {function_recompiles(f)} recompiles")
        out += function_detail_lines(f)
    return [terminal(line) for line in out]
