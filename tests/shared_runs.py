"""Runs several tests read, made once per test session.

A ``guarddiag run`` or ``compare`` costs seconds of torch; tests that check different things about the same
command on the same script read one result instead of each making their own. The results live in a folder
every pytest-xdist worker of the session shares (tests/conftest.py sets ``SHARED``): the first worker to ask
for one makes it under a lock, the others wait and read it. A test reads a shared result and never writes into
its folder: a command that writes (``explain``, ``check --update``...) runs in the test's own ``tmp_path``,
on a copy (``copy_of``).

Use it when two or more tests run the same command on the same files; a test whose point is a side effect of
its own run (run folders kept, timeouts, signals) keeps its own run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from tests.conftest import run_guarddiag

# The session's folder of shared results (tests/conftest.py); None outside a test session.
SHARED: Path | None = None
# Written last into a made folder: a folder without it was interrupted and is made again.
_DONE = "made.json"


def shared(name: str, make: Callable[[Path], dict]) -> tuple[Path, dict]:
    """The folder ``name`` made once per session by ``make(folder)``, and the JSON value ``make`` returned."""
    assert SHARED is not None, "shared results are for tests: tests/conftest.py sets their folder"
    folder = SHARED / name
    folder.mkdir(parents=True, exist_ok=True)
    with (SHARED / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / _DONE
        if not done.exists():
            for stale in folder.iterdir():  # an interrupted make: start clean
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
            done.write_text(json.dumps(make(folder)), encoding="utf-8")
        return folder, json.loads(done.read_text(encoding="utf-8"))


class Result(NamedTuple):
    """One shared ``guarddiag`` command: the folder it ran in (read only) and what it printed."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str


def guarddiag_once(files: dict[str, str], *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> Result:
    """``guarddiag ARGS`` run once per session in a folder holding ``files`` (name -> text). Tests that pass
    the same files, arguments and environment read the same result."""
    key = json.dumps([sorted(files.items()), args, sorted((env or {}).items())])
    name = f"{args[0] if args else 'guarddiag'}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    def make(folder: Path) -> dict:
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text, encoding="utf-8")
        proc = run_guarddiag(*args, cwd=folder, env=env, timeout=timeout)
        return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}

    folder, made = shared(name, make)
    return Result(folder, made["returncode"], made["stdout"], made["stderr"])


def copy_of(result: Result, into: Path) -> Path:
    """A copy of a shared result's folder under ``into`` (a test's tmp_path), for commands that write."""
    target = into / result.folder.name
    shutil.copytree(result.folder, target, ignore=shutil.ignore_patterns(_DONE))
    return target
