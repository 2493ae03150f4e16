"""Shared helpers: paths, and running the installed ``guarddiag`` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
FIXTURES = ROOT / "tests" / "fixtures"
LOGS = FIXTURES / "logs"


def guarddiag_cmd() -> list[str]:
    """The installed console script next to this interpreter."""
    exe = Path(sys.executable).with_name("guarddiag")
    assert exe.exists(), f"guarddiag is not installed in {sys.executable}'s environment (run `make venv`)"
    return [str(exe)]


def run_guarddiag(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300,
                  stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``guarddiag ARGS`` as a user would and capture everything."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [*guarddiag_cmd(), *args], cwd=cwd or ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
        input=stdin,
    )


def torch_truth(script: Path, cwd: Path, flags: tuple[str, ...] = ()) -> dict[tuple[str, int], int]:
    """Compiles per (function name, first line), as torch's own compilation metrics count them."""
    out = cwd / "truth.json"
    proc = subprocess.run(
        [sys.executable, str(FIXTURES / "torch_truth.py"), "--json-out", str(out), *(f"--flag={f}" for f in flags), str(script)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    return {(f["co_name"], f["co_firstlineno"]): f["compiles"] for f in data["functions"]}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
