"""Run folders under ``.guarddiag/runs/``: made per run, kept after it, pruned to the newest."""

from __future__ import annotations

import itertools
import os
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from guarddiag.errors import InputError

# Finished run folders kept under .guarddiag/runs (the newest); GUARDDIAG_KEEP_RUNS=0 keeps them all.
KEEP_RUNS = 20
# A folder without a record (a run still going, or one that crashed) is left alone this long.
_UNFINISHED_GRACE_S = 24 * 3600


def keep_runs() -> int:
    """How many finished run folders to keep: GUARDDIAG_KEEP_RUNS, else KEEP_RUNS."""
    raw = os.environ.get("GUARDDIAG_KEEP_RUNS", "")
    if not raw:
        return KEEP_RUNS
    if not raw.isdigit():
        raise InputError(f"GUARDDIAG_KEEP_RUNS={raw!r}: not a whole number; give how many run folders to keep (0: all)")
    return int(raw)


def prune_runs(runs: Path, keep: int, now: float | None = None) -> list[Path]:
    """Remove all but the ``keep`` newest finished run folders (those with a run.json) under ``runs``,
    and unfinished ones older than a day; ``keep`` 0 removes nothing. Returns what was removed."""
    if keep <= 0 or not runs.is_dir():
        return []
    now = time.time() if now is None else now
    finished, stale = [], []
    for folder in runs.iterdir():
        try:
            if folder.is_symlink() or not folder.is_dir():
                continue
            record = folder / "run.json"
            if record.is_file():
                finished.append((record.stat().st_mtime, folder))
            elif now - folder.stat().st_mtime > _UNFINISHED_GRACE_S:
                stale.append(folder)
        except OSError:
            continue
    finished.sort(reverse=True)
    removed = [folder for _, folder in finished[keep:]] + stale
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


_MAX_STEM_BYTES = 100
# Run folders this process created (an interrupted command says they are kept only when there are some).
RUN_FOLDERS: list[Path] = []


def new_run_dir(workdir: Path, name: str) -> Path:
    """A new folder for one run under ``workdir/runs``, named by time, ``name`` (the script's stem, a module) and pid."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    # A folder name has 255 bytes at most: a long script name is cut (the record names the script whole).
    stem = name.encode("utf-8")[:_MAX_STEM_BYTES].decode("utf-8", "ignore")
    base = workdir / "runs" / f"{stamp}-{stem}-{os.getpid()}"
    for n in itertools.count(1):
        # Parallel runs of one compare share pid and second: mkdir itself decides who gets which name.
        path = base if n == 1 else Path(f"{base}-{n}")
        try:
            path.mkdir(parents=True)
            return Path(os.path.abspath(path))  # records and messages name the log wherever they are read
        except (FileExistsError, NotADirectoryError):
            if path.is_dir():
                continue  # taken by a parallel run
            blocker = next((p for p in (workdir, workdir / "runs") if not p.is_dir()), workdir)
            raise InputError(
                f"{blocker}: cannot create the run folder (it exists and is not a folder, or is a broken link); "
                "remove it or run from another folder"
            ) from None
        except OSError as exc:
            raise InputError(f"{workdir}: cannot create the run folder ({exc.strerror}); run from a writable folder") from None
    raise AssertionError("unreachable")


def recreate_if_removed(run_dir: Path, held: list[tuple[Path, BinaryIO]]) -> bool:
    """When the script removed its run folder (or the files in it), write the held-open files back."""
    if all(path.exists() for path, _ in held):
        return False
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        for path, fh in held:
            if not path.exists():
                fh.seek(0)
                with path.open("wb") as out:
                    shutil.copyfileobj(fh, out)
    except OSError as exc:
        raise InputError(f"{run_dir}: the script removed its run folder and it cannot be re-created ({exc.strerror})") from None
    return True
