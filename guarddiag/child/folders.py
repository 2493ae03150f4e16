"""Run folders under ``.guarddiag/runs/``: made per run, kept after it, pruned to the newest.

A folder guarddiag made holds ``guarddiag.lock``, created under a temporary name, locked (``flock``) and
only then renamed into place: the guarddiag process holds that lock until it exits, so a folder whose
lock another process can take is not in use by any guarddiag. Pruning removes only such folders: never
one in use, one of the command that is running, one without the lock file (not guarddiag's, unless it is
an older guarddiag's finished run: its record and log), nor anything through a symbolic link.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import shutil
import stat
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from guarddiag.errors import InputError
from guarddiag.render.escape import one_line

# Finished run folders kept under .guarddiag/runs (the newest); GUARDDIAG_KEEP_RUNS=0 keeps them all.
KEEP_RUNS = 20
# In every run folder guarddiag makes; flock'ed by the guarddiag process for as long as it runs.
LOCK_NAME = "guarddiag.lock"
# How a record written by any guarddiag begins (store.save_record: the schema key first, indent 2).
_RECORD_HEAD = b'{\n  "schema": "guarddiag.run/'
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# The locks of this process's run folders: open (so held) until it exits.
_HELD: list[int] = []


def keep_runs() -> int:
    """How many finished run folders to keep: GUARDDIAG_KEEP_RUNS, else KEEP_RUNS."""
    raw = os.environ.get("GUARDDIAG_KEEP_RUNS", "")
    if not raw:
        return KEEP_RUNS
    if not raw.isdigit():
        raise InputError(f"GUARDDIAG_KEEP_RUNS={raw!r}: not a whole number; give how many run folders to keep (0: all)")
    return int(raw)


@dataclass
class Pruned:
    """What one pruning removed, and what it left alone and why."""

    removed: list[Path] = field(default_factory=list)
    live: list[Path] = field(default_factory=list)  # held by another guarddiag that is running
    foreign: list[Path] = field(default_factory=list)  # not made by guarddiag: never removed
    links: list[Path] = field(default_factory=list)  # symbolic links and files: never followed
    failed: list[Path] = field(default_factory=list)  # could not be removed (permissions)


def prune_runs(runs: Path, keep: int, own: Collection[Path] = ()) -> Pruned:
    """Remove all but the ``keep`` newest run folders guarddiag made under ``runs`` that no running
    guarddiag holds; ``own`` (the running command's folders) are never removed and count as the newest.

    Raises InputError when ``runs`` or the folder holding it is a symbolic link: nothing is removed through one."""
    pruned = Pruned()
    try:
        parent = os.open(runs.parent, _O_DIR)
    except OSError as exc:
        _refuse_link(runs.parent, exc)
        return pruned
    try:
        top = os.open(runs.name, _O_DIR, dir_fd=parent)
    except OSError as exc:
        _refuse_link(runs, exc)
        return pruned
    finally:
        os.close(parent)
    try:
        _prune_in(top, runs, keep, {_identity(p) for p in own}, pruned)
    finally:
        os.close(top)
    return pruned


def _refuse_link(path: Path, exc: OSError) -> None:
    """A folder that cannot be opened without following a link is refused; one that is not there has nothing to prune."""
    if os.path.islink(path):
        raise InputError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); guarddiag removes no run folder through a link; "
            "make it a real folder, or remove old run folders by hand"
        ) from None
    if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
        raise InputError(f"{path}: cannot read the run folders ({exc.strerror}); nothing was removed") from None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _prune_in(top: int, runs: Path, keep: int, own: set[tuple[int, int] | None], pruned: Pruned) -> None:
    ranked: list[tuple[bool, float, str]] = []  # (this command's, minus when it last wrote, name)
    locks: list[int] = []  # of the folders no one else holds: kept while they are removed
    try:
        for entry in os.scandir(top):
            try:
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    pruned.links.append(runs / entry.name)
                    continue
                folder = os.open(entry.name, _O_DIR, dir_fd=top)
            except OSError:
                continue  # removed meanwhile, or swapped for a link
            try:
                if (st.st_dev, st.st_ino) in own:
                    ranked.append((True, 0.0, entry.name))
                    continue
                kind, lock = _claim(folder)
                locks.extend([lock] if lock is not None else [])
                if kind == "live":
                    pruned.live.append(runs / entry.name)
                elif kind == "foreign":
                    pruned.foreign.append(runs / entry.name)
                else:
                    ranked.append((False, -_newest(folder, st.st_mtime), entry.name))
            finally:
                os.close(folder)
        # This command's folders first (the newest, and never removed), then the others, newest first.
        ranked.sort(key=lambda r: (not r[0], r[1]))
        for is_own, _, name in ranked[keep:]:
            if is_own:
                continue
            try:
                shutil.rmtree(name, dir_fd=top)  # fd-based: a link inside is removed, never followed
                pruned.removed.append(runs / name)
            except FileNotFoundError:
                continue  # another guarddiag pruning at the same time removed it
            except OSError:
                pruned.failed.append(runs / name)
    finally:
        for lock in locks:
            os.close(lock)


def _claim(folder: int) -> tuple[str, int | None]:
    """Whether a run folder is ``live`` (its guarddiag holds the lock), ``free`` (guarddiag's, no one
    holds it: its lock is returned, held) or ``foreign`` (guarddiag did not make it)."""
    try:
        lock = _open_file(LOCK_NAME, folder)
    except FileNotFoundError:
        return ("free" if _older_guarddiags(folder) else "foreign"), None
    except OSError:
        return "foreign", None
    if lock is None:  # a FIFO, a device, a socket: not a lock guarddiag made
        return "foreign", None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return "live", None
    return "free", lock


def _open_file(name: str, folder: int) -> int | None:
    """``name`` in ``folder`` opened for reading when it is a regular file, None when it is another kind.
    Non-blocking: a FIFO under a copied or crafted folder's name made pruning and `clean` wait for a writer forever."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _older_guarddiags(folder: int) -> bool:
    """A finished run folder of a guarddiag from before the lock file: its record and its log.
    An unfinished one (no record) cannot be told from a run of it still going: it is left alone."""
    try:
        fd = _open_file("run.json", folder)
        if fd is None:
            return False
        try:
            head = os.read(fd, len(_RECORD_HEAD))
        finally:
            os.close(fd)
        return head == _RECORD_HEAD and stat.S_ISREG(os.stat("torch.log", dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _newest(folder: int, mtime: float) -> float:
    """When the run ended: its record's time, else its log's (a run whose guarddiag was killed), else the folder's."""
    for name in ("run.json", "torch.log"):
        try:
            return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mtime
        except OSError:
            continue
    return mtime


def prune_after_command() -> None:
    """Prune the run folders once the command that made some has its report out: never between its runs."""
    keep = keep_runs()
    if keep <= 0:
        return
    for runs in dict.fromkeys(p.parent for p in RUN_FOLDERS):
        try:
            prune_runs(runs, keep, RUN_FOLDERS)
        except InputError as exc:
            why = f"guarddiag: warning: {exc}; run folders are not pruned (GUARDDIAG_KEEP_RUNS=0 keeps them all)"
            print(one_line(why), file=sys.stderr)


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
        # A file system without flock (some FUSE mounts): the run goes on in a folder never pruned (not known to be done).
        with contextlib.suppress(OSError):
            _hold(path)
        return Path(os.path.abspath(path))  # records and messages name the log wherever they are read
    raise AssertionError("unreachable")


def _hold(folder: Path) -> None:
    """Mark the folder as guarddiag's and hold it for as long as this process runs: its lock file is
    locked before it takes its name, so a pruner never sees the name unlocked while this process lives."""
    tmp = folder / f".{LOCK_NAME}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.replace(tmp, folder / LOCK_NAME)
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    _HELD.append(fd)


def recreate_if_removed(run_dir: Path, held: list[tuple[Path, BinaryIO]]) -> bool:
    """When the script removed its run folder (or the files in it), write the held-open files back."""
    if all(path.exists() for path, _ in held):
        return False
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        if not (run_dir / LOCK_NAME).exists():
            with contextlib.suppress(OSError):  # as in new_run_dir: unlocked, it is never pruned
                _hold(run_dir)  # a re-created folder is still this command's: no other guarddiag prunes it
        for path, fh in held:
            if not path.exists():
                fh.seek(0)
                with path.open("wb") as out:
                    shutil.copyfileobj(fh, out)
    except OSError as exc:
        raise InputError(f"{run_dir}: the script removed its run folder and it cannot be re-created ({exc.strerror})") from None
    return True
