"""Renderers: ``render(run) -> str`` for each output format; no I/O here.

Imports are deferred: the CLI imports this package for FORMATS on every start.
"""

from __future__ import annotations

from guarddiag.model import Run

FORMATS = ("table", "json", "yaml", "markdown")


def render(run: Run, fmt: str) -> str:
    """The run in one of :data:`FORMATS`."""
    if fmt in ("json", "yaml"):
        from guarddiag.store import run_to_dict

        if fmt == "json":
            import json

            return json.dumps(run_to_dict(run), indent=2)
        import yaml

        return yaml.safe_dump(run_to_dict(run), sort_keys=False, width=120)
    if fmt == "markdown":
        from guarddiag.render import markdown

        return markdown.render(run)
    from guarddiag.render import table

    return table.render(run)
