"""``guarddiag clean``: remove run folders (and, on request, the cached flag catalogs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer


def clean_command(keep: int, cache: bool) -> None:
    """Remove all but the newest ``keep`` run folders under .guarddiag/runs that no running guarddiag
    holds; say how many went and what was left alone."""
    from guarddiag.child.folders import prune_runs

    runs = Path(".guarddiag") / "runs"
    pruned = prune_runs(runs, keep)
    if cache:
        shutil.rmtree(Path(".guarddiag") / "cache", ignore_errors=True)
    left = [
        f"{len(pruned.live)} in use by a running guarddiag" if pruned.live else "",
        f"{len(pruned.foreign)} not made by guarddiag (remove them by hand)" if pruned.foreign else "",
        f"{len(pruned.links)} link(s) or file(s), not followed" if pruned.links else "",
        f"{len(pruned.failed)} that could not be removed (first: {pruned.failed[0]})" if pruned.failed else "",
    ]
    left = [part for part in left if part]
    typer.echo(
        f"removed {len(pruned.removed)} run folder(s) from {runs}"
        + (f"; left {', '.join(left)}" if left else "")
        + ("; and the flag catalog cache" if cache else "")
    )
