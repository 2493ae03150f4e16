"""Renderers: the only place that writes English. One module per report, each in every format of
:data:`FORMATS`, no I/O: the run report (``render(run)`` here: table.py, markdown.py, summary.py),
diff.py (``diff``), compare.py (``compare``), gate.py (``check``), flags.py, explain.py; words.py
holds the phrases they share.

Imports are deferred: a command imports only the renderer it prints with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guarddiag.render.formats import FORMATS, render_as

if TYPE_CHECKING:  # the model is imported by the commands that make a run, not by `guarddiag version`
    from guarddiag.model import Run
    from guarddiag.verdicts import RunAdvice

__all__ = ["FORMATS", "render"]


def render(run: Run, fmt: str, advice: RunAdvice | None = None) -> str:
    """The run in one of :data:`FORMATS`; with ``advice`` (``guarddiag run``), each cause group's fix hint
    and where it stands for the script (the JSON report adds it as ``advice``)."""

    def to_dict() -> object:
        from guarddiag.store import run_to_dict

        if advice is None:
            return run_to_dict(run)
        from guarddiag.render.flips import advice_to_dict

        return run_to_dict(run) | {"advice": advice_to_dict(advice)}

    def markdown() -> str:
        from guarddiag.render import markdown

        return markdown.render(run, advice)

    def table() -> str:
        from guarddiag.render import table

        return table.render(run, advice)

    return render_as(fmt, to_dict, markdown, table)
