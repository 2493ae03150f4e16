"""``guarddiag run`` of a corpus script (tests/corpus/), once per test session: the answers tests
(tests/e2e/run/test_corpus.py) and the hints tests (tests/e2e/explain/test_hints.py) read the same run of a
script, which costs seconds of torch each time: it is made once per session (tests/shared_runs.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from tests.conftest import ROOT, run_guarddiag
from tests.shared_runs import shared

CORPUS = ROOT / "tests" / "corpus"


class CorpusRun(NamedTuple):
    record: dict
    truth: dict
    stdout: str


def corpus_run(script: str, fix: bool = False, backend: str = "eager") -> CorpusRun:
    """``guarddiag run`` of a corpus script: its run record, torch's account (tests/oracle/_truth.py) and the
    command's output. A script written for inductor (``torch.compile`` without a backend) runs on ``backend``:
    eager in ``make test``, inductor in ``make test-inductor`` (``_truth`` reads GUARDDIAG_CORPUS_BACKEND)."""
    name = f"corpus-{Path(script).stem}-{'fixed' if fix else 'as-is'}-{backend}"
    workdir, made = shared(name, lambda folder: _run(script, fix, backend, folder))
    return CorpusRun(json.loads((workdir / "run.json").read_text()), json.loads((workdir / "truth.json").read_text()),
                     made["stdout"])


def _run(script: str, fix: bool, backend: str, workdir: Path) -> dict:
    env = {
        "PYTHONPATH": str(ROOT / "tests" / "oracle"),
        "GUARDDIAG_ORACLE_TRUTH": str(workdir / "truth.json"),
        "CORPUS_FIX": "1" if fix else "0",
        "GUARDDIAG_CORPUS_BACKEND": "" if backend == "inductor" else backend,
    }
    proc = run_guarddiag("run", str(CORPUS / script), "--out", str(workdir / "run.json"), cwd=workdir, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-3000:]}"
    return {"stdout": proc.stdout}
