"""The parser on real logs recorded from real torch runs (tests/fixtures/logs/README.md says how).

Each ``torch-<version>/<scenario>.log`` has a ``.truth.json`` beside it with the compile counts
torch's own metrics reported in the same environment: the parser must find the same counts
from the text alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guarddiag.pipeline import build_from_lines, parse_logs
from guarddiag.report import record_dict, run_report
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


# How editors and shells save a log: a UTF-8 BOM (Windows editors), UTF-16 LE with its BOM (PowerShell
# 5.1's `>`), big-endian and UTF-32 with theirs, and UTF-16 without a mark. A UTF-8 BOM hid the first
# line's prefix (a log read as a paste, its compiles lost) and UTF-16 read as no torch line at all.
_ENCODINGS = {
    "utf-8 BOM": lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
    "utf-16 LE BOM": lambda text: b"\xff\xfe" + text.encode("utf-16-le"),
    "utf-16 BE BOM": lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
    "utf-32 BOM": lambda text: text.encode("utf-32"),
    "utf-16 LE, no BOM": lambda text: text.encode("utf-16-le"),
}
_SAVED = [
    LOGS / "torch-2.13.0" / "tensor_shape.log",
    LOGS / "torch-2.13.0" / "reset_and_failures.log",
    LOGS.parent / "pasted" / "003-pytorch-123784.txt",
]


def _record(path: Path) -> dict:
    d = record_dict(run_report(parse_logs([str(path)])))
    d.pop("log_path")
    return d


@pytest.mark.parametrize("encoding", sorted(_ENCODINGS))
@pytest.mark.parametrize("log", _SAVED, ids=lambda p: p.stem)
def test_a_log_saved_with_a_byte_order_mark_or_as_utf16_reads_as_the_original(log: Path, encoding: str, tmp_path: Path):
    saved = tmp_path / log.name
    saved.write_bytes(_ENCODINGS[encoding](log.read_bytes().decode("utf-8")))
    original = _record(log)
    assert original["totals"]["compiles"] or original["parse"].get("paste_messages")
    assert _record(saved) == original


def test_a_torchrun_log_dir_saved_as_utf16_is_read_per_rank(tmp_path: Path):
    """Its workers are named by the [rankN]: prefixes of their UTF-16 lines."""
    source = LOGS / "torch-2.13.0" / "torchrun" / "logdir"
    for log in source.rglob("*.log"):
        saved = tmp_path / log.relative_to(source)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(_ENCODINGS["utf-16 LE BOM"](log.read_bytes().decode("utf-8")))
    original, saved = parse_logs([str(source)]), parse_logs([str(tmp_path)])
    assert [str(p.process) for p in saved.job.processes] == [str(p.process) for p in original.job.processes] == ["rank0", "rank1"]
    assert [(f.process, f.name, f.compiles) for f in saved.functions] == [(f.process, f.name, f.compiles) for f in original.functions]


def test_a_utf16_log_is_decoded_as_it_is_read(tmp_path: Path):
    """Decoding by the mark streams: reading a 50-copy UTF-16 log holds about what one line needs."""
    import tracemalloc

    from guarddiag.logparse.encoding import open_log

    text = (LOGS / "torch-2.13.0" / "tensor_shape.log").read_bytes().decode("utf-8")
    saved = tmp_path / "big.log"
    saved.write_bytes(_ENCODINGS["utf-16 LE BOM"](text * 50))
    tracemalloc.start()
    with open_log(saved) as fh:
        lines = sum(1 for _ in fh)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert lines == 50 * text.count("\n")
    assert saved.stat().st_size > 8 << 20 and peak < 1 << 20
