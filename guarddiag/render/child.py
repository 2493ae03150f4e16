"""What guarddiag says about a child it started: a request the bootstrap refused, an interpreter that
did not start the script, a run folder it cannot read or write, runs that take turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

# The way out of each refusal of the bootstrap (meta.json's error kind).
_WAY_OUT = {
    "flag": "fix or drop the --flag",
    "import": "fix what torch names (e.g. TORCH_LOGS) or pick another --python",
    "module": "give a module that `python -m` runs there (run from the folder that holds it, or install it)",
}
_NO_TORCH = "install torch there or pick another --python"
_A_PYTHON = "give the path of a Python that has torch installed"


def refused(refusal: Mapping[str, object], label: str) -> str:
    """The bootstrap refused the request before the script ran (a flag, torch's import, the module)."""
    suggestions = refusal.get("suggestions")
    hint = f" (did you mean: {', '.join(map(str, suggestions))}?)" if isinstance(suggestions, list) and suggestions else ""
    what = _WAY_OUT.get(str(refusal.get("kind")), _NO_TORCH)
    return f"{refusal['message']}{hint}{_where(label)}; {what}; nothing was run"


def unstartable(python: str, strerror: str) -> str:
    """The OS could not start the interpreter."""
    return f"--python {python}: cannot start it ({strerror}); {_A_PYTHON}"


def no_bootstrap(python: str, exit_code: int | None, folder: Path) -> str:
    """The interpreter exited without starting guarddiag's bootstrap (/bin/echo, a Python too old)."""
    return (
        f"--python {python} exited (status {exit_code}) without starting guarddiag's bootstrap; "
        f"give the path of a Python 3.8+ that has torch installed (log folder: {folder})"
    )


def unreadable_log(folder: Path, exc: OSError) -> str:
    """The run's torch log cannot be read after the run."""
    return (
        f"{folder}: cannot read the run's torch log ({exc.strerror}: {exc.filename}); "
        "did the script delete or change its run folder?"
    )


def unsaved_record(path: Path, why: str, fix: str | None) -> str:
    """The run folder's copy of the record could not be written (``why``: store.write_failure's)."""
    fix = fix or "did the script delete or change its run folder?"
    return f"guarddiag: warning: {path}: cannot write the run record ({why}); the report is made without it; {fix}"


def refused_flag(error: str, label: str) -> str:
    """A --flag the cached catalog of the target torch refuses, before anything runs."""
    return f"{error}{_where(label)}; fix or drop the --flag; nothing was run"


def taking_turns(addresses: Sequence[str]) -> str:
    """Runs of a torchrun job that meet at one fixed address run one at a time."""
    return (
        f"guarddiag: these runs of a torchrun job all meet at {', '.join(addresses)}: they run one at a time "
        "(give torchrun --standalone, or a free --rdzv-endpoint per run, to run them in parallel)"
    )


def _where(label: str) -> str:
    """Which of several runs (compare's configuration, check's script) a message is about."""
    return f" [{label}]" if label else ""
