"""``guarddiag clean``: remove run folders (and, on request, the cached flag catalogs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer


def clean_command(keep: int, cache: bool) -> None:
    """Remove all but the newest ``keep`` finished run folders under .guarddiag/runs; say how many went."""
    from guarddiag.child.folders import prune_runs

    runs = Path(".guarddiag") / "runs"
    if keep == 0 and runs.is_dir():
        removed = [p for p in runs.iterdir() if p.is_dir() and not p.is_symlink()]
        for folder in removed:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        removed = prune_runs(runs, keep)
    if cache:
        shutil.rmtree(Path(".guarddiag") / "cache", ignore_errors=True)
    typer.echo(f"removed {len(removed)} run folder(s) from {runs}" + ("; and the flag catalog cache" if cache else ""))
