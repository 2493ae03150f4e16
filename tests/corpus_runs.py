"""``guarddiag run`` of a corpus script (tests/corpus/), once per test session: the answers tests
(tests/e2e/run/test_corpus.py) and the hints tests (tests/e2e/explain/test_hints.py) read the same run of a
script, which costs seconds of torch each time. The runs live in a folder every pytest-xdist worker of the
session shares (tests/conftest.py sets ``SHARED``); the first worker to ask for a run makes it under a lock,
the others wait and read it. A test reads a shared run and never writes into its folder: it runs its own
commands in its own ``tmp_path``."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import NamedTuple

from tests.conftest import ROOT, run_guarddiag

CORPUS = ROOT / "tests" / "corpus"
# The session's folder of shared runs (tests/conftest.py); None outside a test session.
SHARED: Path | None = None


class CorpusRun(NamedTuple):
    record: dict
    truth: dict
    stdout: str


def corpus_run(script: str, fix: bool = False, backend: str = "eager") -> CorpusRun:
    """``guarddiag run`` of a corpus script: its run record, torch's account (tests/oracle/_truth.py) and the
    command's output. A script written for inductor (``torch.compile`` without a backend) runs on ``backend``:
    eager in ``make test``, inductor in ``make test-inductor`` (``_truth`` reads GUARDDIAG_CORPUS_BACKEND)."""
    assert SHARED is not None, "corpus_run is for tests: tests/conftest.py sets its folder"
    workdir = SHARED / f"{Path(script).stem}-{'fixed' if fix else 'as-is'}-{backend}"
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (workdir / "stdout.txt").exists():
            _run(script, fix, backend, workdir)
        stdout = (workdir / "stdout.txt").read_text(encoding="utf-8")
        return CorpusRun(json.loads((workdir / "run.json").read_text()), json.loads((workdir / "truth.json").read_text()), stdout)


def _run(script: str, fix: bool, backend: str, workdir: Path) -> None:
    env = {
        "PYTHONPATH": str(ROOT / "tests" / "oracle"),
        "GUARDDIAG_ORACLE_TRUTH": str(workdir / "truth.json"),
        "CORPUS_FIX": "1" if fix else "0",
        "GUARDDIAG_CORPUS_BACKEND": "" if backend == "inductor" else backend,
    }
    proc = run_guarddiag("run", str(CORPUS / script), "--out", str(workdir / "run.json"), cwd=workdir, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-3000:]}"
    (workdir / "stdout.txt").write_text(proc.stdout, encoding="utf-8")  # last: it marks the run complete
