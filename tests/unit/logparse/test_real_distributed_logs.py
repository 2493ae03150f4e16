"""Distributed-job logs nobody on the team wrote: torch lines behind ``[rankN]:`` prefixes, pasted in
public GitHub issues (tests/fixtures/distributed/real, each log's .md gives its source and what was
counted there by hand). Each test asserts a hand-counted fact; a fact guarddiag gets wrong is a strict
xfail that names the bug."""

from __future__ import annotations

import json
from typing import Any

import pytest

from guarddiag.pipeline import parse_logs
from guarddiag.render import render
from guarddiag.report import run_report
from tests.conftest import FIXTURES

REAL = FIXTURES / "distributed" / "real"


def _record(name: str) -> tuple[dict[str, Any], str]:
    """The run record (as ``--format json`` writes it) and the table report of one fixture."""
    run = parse_logs([str(REAL / f"{name}.log")])
    return json.loads(render(run_report(run), "json")), render(run_report(run), "table")


def _rank(function: dict[str, Any]) -> str:
    """``rank3`` from a frame id ``rank3:1``; ``""`` when the frame has no rank."""
    frame = function["frame_ids"][0]
    return frame.split(":", 1)[0] if frame.startswith("rank") else ""


def _per_rank(record: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each function by (rank, name)."""
    return {(_rank(f), f["name"]): f for f in record["functions"]}


def _diverging(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The functions the ranks are known to have compiled differently."""
    return [f for job in record["rank_divergence"] for f in job["functions"] if f["known"]]


def test_all_fixtures_have_their_source_note() -> None:
    logs = sorted(REAL.glob("*.log"))
    assert len(logs) >= 4
    for log in logs:
        note = log.with_suffix(".md").read_text(encoding="utf-8")
        assert "https://github.com/" in note, log.name


# pytorch/pytorch#138813 (torch 2.5, FSDP, 2 ranks): quoted with "> ", the first torch line glued to a
# tqdm bar. Both ranks announce one recompile of forward (compile_debug.py:150) at [1/1]; rank 0's
# reason is shown, rank 1's reason lines are not in the paste.


def test_138813_each_rank_recompiles_forward_once() -> None:
    record, _ = _record("pytorch_138813")
    functions = _per_rank(record)
    assert set(functions) == {("rank0", "forward"), ("rank1", "forward")}
    for rank in ("rank0", "rank1"):
        f = functions[(rank, "forward")]
        assert (f["file"], f["line"]) == ("/home/user/compile_debug.py", 150)
        assert len(f["recompile_events"]) == 1 and not f["limit_hit"]
    (event,) = functions[("rank0", "forward")]["recompile_events"]
    assert _facts(event["causes"][0]) == ("TENSOR_MATCH", "x", "local", "", "size", 1)


def test_138813_rank1_recompile_is_announced_by_torch() -> None:
    record, _ = _record("pytorch_138813")
    (event,) = _per_rank(record)[("rank1", "forward")]["recompile_events"]
    assert event["logged"] is True


def test_138813_an_unknown_cause_is_neither_alike_nor_different() -> None:
    record, text = _record("pytorch_138813")
    assert _diverging(record) == []
    assert "compiled differently" not in text and "alike" not in text
    (job,) = record["rank_divergence"]
    (forward,) = job["functions"]
    assert (forward["known"], forward["unclear_ranks"]) == (False, [1])
    assert "rank divergence: not known (ranks 0, 1:" in text


# pytorch/pytorch#138813, a later part of the same paste: the first line is a reason of rank 0's
# [1/4] recompile (its header cut off above); rank 1 announces its [1/4] recompile of forward with
# four reasons, all a size change of x at dim 1.


def test_138813_later_rank1_recompile_with_four_reasons() -> None:
    record, _ = _record("pytorch_138813_later")
    f = _per_rank(record)[("rank1", "forward")]
    (event,) = f["recompile_events"]
    assert len(event["causes"]) + len(event["also"]) >= 1
    assert {_facts(c) for c in event["causes"]} == {("TENSOR_MATCH", "x", "local", "", "size", 1)}
    assert not f["limit_hit"]


def test_138813_later_an_orphan_reason_keeps_its_rank() -> None:
    record, text = _record("pytorch_138813_later")
    assert all(_rank(f) for f in record["functions"])
    assert "without a [rankN]: prefix" not in text


# pytorch/pytorch#139474 (DDP, ranks 3 and 6 of a larger job): rank 6's cache_size_limit (64) warning at
# [1/64] with its first line cut off above the paste (only 'function:', 'last reason' and the advice),
# then rank 3's full warning head at [1/64] for forward (detail_capture.py:131). No recompile message.


def test_139474_rank3_hits_the_cache_size_limit_on_forward() -> None:
    record, _ = _record("pytorch_139474")
    f = _per_rank(record)[("rank3", "forward")]
    assert (f["file"], f["line"]) == ("/workspace/modeling/decoder/detail_capture.py", 131)
    (hit,) = f["limit_hits"]
    assert (hit["compile_id"], hit["limit"], hit["value"]) == ("rank3:1/64", "cache_size_limit", 64)


def test_139474_rank6_hits_the_limit_and_1_64_is_no_compile() -> None:
    record, _ = _record("pytorch_139474")
    (f,) = [f for f in record["functions"] if _rank(f) == "rank6"]
    assert f["limit_hit"]
    assert f["compiles"] <= 64
    assert record["totals"]["limit_hits"] == 2


def test_139474_a_rank_that_hit_the_limit_is_not_said_to_have_never_compiled_it() -> None:
    _, text = _record("pytorch_139474")
    assert "never compiled it" not in text


# huggingface/trl#3611 (accelerate, 8 ranks): rank 7's recompile_limit (8) warning at [1/8], its first
# line after ~200 spaces of a tqdm bar and followed by the bar's tail; then rank 2's warning head at
# [1/8], cut after '(8' in the stored copy.


def test_3611_rank7_hits_the_recompile_limit_on_forward() -> None:
    record, _ = _record("trl_3611")
    f = _per_rank(record)[("rank7", "forward")]
    assert f["file"].endswith("accelerate/utils/operations.py") and f["line"] == 817
    (hit,) = f["limit_hits"]
    assert (hit["limit"], hit["value"]) == ("recompile_limit", 8)
    assert _facts(hit["cause"]) == ("TENSOR_MATCH", "kwargs", "local", "['input_ids']", "size", 1)
    assert _diverging(record) == []


@pytest.mark.xfail(
    strict=True,
    reason="read as a paste, rank 7's limit hit loses its compile number: recorded as 'rank7:' (the report "
    "says 'in rank7', no longer 'at rank7:') instead of rank7:1/8",
)
def test_3611_rank7_limit_hit_keeps_its_compile_id() -> None:
    record, _ = _record("trl_3611")
    (hit,) = _per_rank(record)[("rank7", "forward")]["limit_hits"]
    assert hit["compile_id"] == "rank7:1/8"


@pytest.mark.xfail(
    strict=True,
    reason="rank 2's 'torch._dynamo hit config.recompile_limit (8' line, cut before ')', is not "
    "recognised as a limit hit (the pattern needs the closing parenthesis)",
)
def test_3611_rank2_limit_hit_on_a_line_cut_short() -> None:
    record, _ = _record("trl_3611")
    assert any(_rank(f) == "rank2" and f["limit_hit"] for f in record["functions"])


def _facts(cause: dict) -> tuple[object, ...]:
    """A recorded cause's facts: its kind, the guarded object's root, role and path, the property and the dim."""
    guarded = cause["guarded"]
    return (cause["kind"], guarded["root"], guarded["role"], guarded.get("path", ""), cause["checked"], cause["dim"])
