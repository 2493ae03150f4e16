"""Renderers: ``render(run) -> str`` for each output format; no I/O here."""

from __future__ import annotations

import json

import yaml

from guarddiag.model import Run
from guarddiag.render import markdown, table
from guarddiag.store import run_to_dict

FORMATS = ("table", "json", "yaml", "markdown")


def render(run: Run, fmt: str) -> str:
    """The run in one of :data:`FORMATS`."""
    if fmt == "json":
        return json.dumps(run_to_dict(run), indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(run_to_dict(run), sort_keys=False, width=120)
    if fmt == "markdown":
        return markdown.render(run)
    return table.render(run)
