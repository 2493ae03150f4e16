"""``guarddiag diff``: which recompiles differ between two saved run records."""

from __future__ import annotations

from pathlib import Path

from guarddiag.commands.options import check_format
from guarddiag.commands.output import echo


def diff_command(a: Path, b: Path, fmt: str) -> None:
    """Read both records, diff B against A, print the report."""
    from guarddiag.diff import diff_runs
    from guarddiag.render.diff import render_diffs
    from guarddiag.store import load_run

    check_format(fmt)
    before, after = load_run(a), load_run(b)
    echo(render_diffs([diff_runs(before, after, a.name, b.name)], fmt))
