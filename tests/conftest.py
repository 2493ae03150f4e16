"""Shared helpers: paths, and running the installed ``guarddiag`` command in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
FIXTURES = ROOT / "tests" / "fixtures"
LOGS = FIXTURES / "logs"
# The root recorded fixtures name for this checkout (tests/fixtures/record_logs.py writes it).
NEUTRAL_PROJECT = "/home/user/project"
# Interpreters of other torch versions: environment variable -> the torch version it must have.
OTHER_TORCH = {"GUARDDIAG_TORCH_2_4_PYTHON": "2.4.", "GUARDDIAG_TORCH_2_1_PYTHON": "2.1."}


def in_checkout(text: str) -> str:
    """A recorded fixture's text with its neutral project root read as this checkout."""
    return text.replace(NEUTRAL_PROJECT + "/", f"{ROOT}/")


def other_torch_python(variable: str) -> str | None:
    """The interpreter named by VARIABLE (see tests/fixtures/logs/README.md), checked for its torch version."""
    python = os.environ.get(variable, "")
    if not python:
        return None
    proc = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                          timeout=120)
    want = OTHER_TORCH[variable]
    if proc.returncode != 0 or not proc.stdout.startswith(want):
        pytest.fail(f"{variable}={python} should run torch {want}x; it printed {proc.stdout.strip() or proc.stderr[-300:]!r}")
    return python


def needs_other_torch(variable: str) -> pytest.MarkDecorator:
    """Skip, naming the variable, when the interpreter for another torch version is not configured."""
    return pytest.mark.skipif(not os.environ.get(variable),
                              reason=f"set {variable} to a python with torch {OTHER_TORCH[variable]}x to run this")


def in_make_test(values: list, sample: set[str]) -> list:
    """``values`` as pytest parameters, those whose first item is not in ``sample`` marked ``slow``: ``make test``
    runs the sample (one per mechanism), ``make test-slow`` the rest (tests/README.md). Parameters marked
    already (``inductor``) keep their marks."""
    def items(v) -> tuple:
        return (v,) if isinstance(v, str) else tuple(v)

    named = {items(v)[0] for v in values if not hasattr(v, "marks")}
    assert sample <= named, f"not among the parameters: {sorted(sample - named)}"
    return [v if hasattr(v, "marks") or items(v)[0] in sample else pytest.param(*items(v), marks=pytest.mark.slow) for v in values]


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


def torch_truth(script: Path, cwd: Path, flags: tuple[str, ...] = (), env: dict[str, str] | None = None) -> dict[tuple[str, int], int]:
    """Compiles per (function name, first line), as torch's own compilation metrics count them: the script run
    by tests/fixtures/torch_truth.py under tests/oracle/_truth.py, the one account of torch's counts here."""
    out = cwd / "truth.json"
    proc = subprocess.run(
        [sys.executable, str(FIXTURES / "torch_truth.py"), "--json-out", str(out), *(f"--flag={f}" for f in flags), str(script)],
        cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return truth_counts(json.loads(out.read_text()))


def truth_counts(truth: dict) -> dict[tuple[str, int], int]:
    """Compiles per (function name, first line) in a truth document of tests/oracle/_truth.py (or torch_truth.py)."""
    return {(f["co_name"], f["co_firstlineno"]): f["compiles"] for f in truth["functions"]}


@pytest.fixture(scope="session", autouse=True)
def _shared_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The folder where results several tests read are made once for the session (tests/shared_runs.py):
    under pytest-xdist, beside the workers' own temporary folders, so that every worker finds it."""
    from tests import shared_runs

    base = tmp_path_factory.getbasetemp()
    shared_runs.SHARED = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "shared-runs"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def process_gone(pid: int, within: float = 10) -> bool:
    """Whether process ``pid`` exits within ``within`` seconds (a zombie waiting to be reaped counts as
    gone); one still running then is killed, so that no test leaves it behind for the next."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return True
        if stat[stat.rfind(b")") + 2 :][:1] == b"Z":
            return True
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    return False


def recorded_subject(cause: dict) -> str:
    """What a recorded cause (a record's JSON object) is about, in the words reports use."""
    from guarddiag.render.words import cause_subject
    from guarddiag.store import cause_from_dict

    return cause_subject(cause_from_dict(cause))
