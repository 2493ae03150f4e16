"""The parser on real logs recorded from real torch runs (tests/fixtures/logs/README.md says how).

Each ``torch-<version>/<scenario>.log`` has a ``.truth.json`` beside it with the compile counts
torch's own metrics reported in the same environment: the parser must find the same counts
from the text alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guarddiag.pipeline import build_from_lines
from tests.conftest import LOGS

RECORDED = sorted(p for p in LOGS.glob("torch-*/*.log") if p.with_name(p.name[: -len(".log")] + ".truth.json").exists())


def _parse(path: Path):
    with path.open(encoding="utf-8", errors="replace") as fh:
        return build_from_lines(fh)


def test_there_are_recordings_of_two_torch_versions():
    assert len({p.parent.name for p in RECORDED}) >= 2


@pytest.mark.parametrize("log", RECORDED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_counts_match_torch_metrics(log: Path):
    truth = json.loads(log.with_name(log.name[: -len(".log")] + ".truth.json").read_text())
    expected = {(f["co_name"], f["co_firstlineno"]): f["compiles"] for f in truth["functions"]}
    functions, stats = _parse(log)
    assert {(f.name, f.line): f.compiles for f in functions} == expected
    assert stats.unrecognized == 0, stats.unrecognized_samples
    assert stats.unidentified_frames == ()
    for f in functions:
        assert len(f.recompile_events) == f.recompiles
        for event in f.recompile_events:
            assert event.causes, event
