"""The one place that maps an output format to its renderer, for runs, diffs and explanations."""

from __future__ import annotations

from collections.abc import Callable

FORMATS = ("table", "json", "yaml", "markdown")


def render_as(fmt: str, to_dict: Callable[[], object], markdown: Callable[[], str], table: Callable[[], str]) -> str:
    """``fmt`` rendered: json and yaml from the same dict, markdown and table by their own renderers
    (which escape their values); each escaped for its medium by render.escape, JSON and YAML exactly."""
    if fmt == "json":
        import json  # deferred with escape: `guarddiag version` imports this module for FORMATS

        from guarddiag.render import escape

        return escape.json_text(json.dumps(to_dict(), indent=2))
    if fmt == "yaml":
        from guarddiag.render import escape

        return escape.yaml_text(to_dict())
    if fmt in ("markdown", "table"):
        from guarddiag.render.escape import terminal

        # Behind the renderers' own escaping of each value: no raw control, no line the runner acts on.
        return terminal(markdown() if fmt == "markdown" else table())
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
