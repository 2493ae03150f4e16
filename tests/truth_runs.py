"""What several e2e tests read of real torch runs, made once per test session (tests/shared_runs.py):
torch's own count of a scenario under some flags (``conftest.torch_truth``) and a ``guarddiag compare``
report (run where the session's flag catalog is cached: tests/flag_catalog.py). Each costs torch imports
(seconds each); the compare and explain tests ask for the same ones again and again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import run_guarddiag, torch_truth
from tests.flag_catalog import cache_flag_catalog
from tests.shared_runs import Result, shared


def shared_truth(script: Path, flags: tuple[str, ...] = ()) -> dict[tuple[str, int], int]:
    """``torch_truth(script, flags)``: compiles per (function, first line), counted once per session."""
    key = hashlib.sha256(json.dumps([str(script), script.read_text(encoding="utf-8"), flags]).encode()).hexdigest()[:16]

    def make(folder: Path) -> dict:
        return {"counts": [[name, line, n] for (name, line), n in torch_truth(script, folder, flags).items()]}

    _, made = shared(f"truth-{script.stem}-{key}", make)
    return {(name, line): n for name, line, n in made["counts"]}


def compare_once(*args: str) -> tuple[Result, dict]:
    """``guarddiag compare ARGS --out compare.json``, run once per session in a folder holding the session's
    flag catalog: the command's result and its report. A test reads them and writes nothing there."""
    key = hashlib.sha256(json.dumps(args).encode()).hexdigest()[:16]

    def make(folder: Path) -> dict:
        proc = run_guarddiag("compare", *args, "--out", "compare.json", cwd=cache_flag_catalog(folder))
        return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}

    folder, made = shared(f"compare-{key}", make)
    result = Result(folder, made["returncode"], made["stdout"], made["stderr"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return result, json.loads((folder / "compare.json").read_text(encoding="utf-8"))
