"""Renderers: the only place that writes English. One module per report, each in every format of
:data:`FORMATS`, no I/O: the run report (``render(report)`` here, of a report.RunReport: table.py, markdown.py, summary.py),
diff.py (``diff``), compare.py (``compare``), gate.py (``check``), flags.py, explain.py; words.py
holds the phrases they share.

Imports are deferred: a command imports only the renderer it prints with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guarddiag.render.formats import FORMATS, render_as

if TYPE_CHECKING:  # the model is imported by the commands that make a run, not by `guarddiag version`
    from guarddiag.report import RunReport

__all__ = ["FORMATS", "render"]


def render(report: RunReport, fmt: str) -> str:
    """The run's report value (report.RunReport) in one of :data:`FORMATS`; with its advice (``guarddiag
    run``), each cause group's fix hint and where it stands for the script (the JSON report adds it as
    ``advice``; where torch's own record gives a recompile's cause otherwise, ``disagreements``). JSON is the
    record ``--out`` writes, from the same value."""
    from guarddiag.torchcheck import disagreement_dict

    def to_dict() -> object:
        from guarddiag.report import record_dict

        # Recompiles whose cause torch's own record gives otherwise: only a report that has any shows the key.
        checked = {"disagreements": [disagreement_dict(d) for d in report.disagreements]} if report.disagreements else {}
        if report.advice is None:
            return record_dict(report) | checked
        from guarddiag.render.flips import advice_to_dict

        return record_dict(report) | checked | {"advice": advice_to_dict(report.advice)}

    def markdown() -> str:
        from guarddiag.render import markdown

        return markdown.render(report)

    def table() -> str:
        from guarddiag.render import table

        return table.render(report)

    return render_as(fmt, to_dict, markdown, table)
