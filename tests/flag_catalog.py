"""The flag catalog ``guarddiag flags`` reads from torch and caches under ``.guarddiag/cache``, made once per
test session (tests/shared_runs.py) and copied into a test's folder: reading it imports torch (seconds), and
``compare`` (or a flag error's suggestions) reads it first in every fresh folder. Tests whose point is
reading the catalog, or refusing a flag before it is cached, do not use this."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.shared_runs import guarddiag_once


def cache_flag_catalog(cwd: Path) -> Path:
    """Put the catalog ``guarddiag flags`` cached (once per session) where guarddiag run in ``cwd`` looks for it,
    as if ``guarddiag flags`` had run there; ``cwd`` again, to run in."""
    made = guarddiag_once({}, "flags", "recompile")
    assert made.returncode == 0, made.stderr[-2000:]
    shutil.copytree(made.folder / ".guarddiag" / "cache", cwd / ".guarddiag" / "cache", dirs_exist_ok=True)
    return cwd
