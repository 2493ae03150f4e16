"""The one place that maps an output format to its renderer, for runs, diffs and explanations."""

from __future__ import annotations

from collections.abc import Callable

FORMATS = ("table", "json", "yaml", "markdown")


def render_as(fmt: str, to_dict: Callable[[], object], markdown: Callable[[], str], table: Callable[[], str]) -> str:
    """``fmt`` rendered: json and yaml from the same dict, markdown and table by their own renderers."""
    if fmt == "json":
        import json  # deferred with yaml: `guarddiag version` imports this module for FORMATS

        return json.dumps(to_dict(), indent=2)
    if fmt == "yaml":
        import yaml  # deferred: only the yaml format needs it

        return yaml.safe_dump(to_dict(), sort_keys=False, width=120)
    if fmt == "markdown":
        return markdown()
    if fmt == "table":
        return table()
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
