"""run --measure-guards: each lookup attributed to the frame whose compiled region follows it (recorded events of a
real run), the figures placed on functions, kept in the record and said in words."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.child._site._guarddiag_guardtime import LOOKUP, PROFILER_TAKEN, REGION, SCHEMA, _quantile, summarize
from guarddiag.errors import InputError
from guarddiag.guardtime import Measured, guard_time_from_dict, read_guard_time, with_guard_times
from guarddiag.ids import FrameId, Process
from guarddiag.model import FunctionSummary, GuardTime, ParseStats, Run, TorchMetrics
from guarddiag.render import render
from guarddiag.render.words import measured_guards_sentence, unmeasured_guards_sentence
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "guard_time" / "events-2.13.json"


def _recorded() -> list:
    return [tuple(e) for e in json.loads(FIXTURE.read_text())["events"]]


def test_recorded_lookups_are_attributed_to_the_frames_the_script_called():
    """lookups.py's known calls: step 80 (one recompile), broken and its resume function 20 each, limited 2
    compiled entries then 2 calls at the recompile limit that ran eagerly."""
    found = summarize(_recorded())
    frames = found["frames"]
    assert {k: (v["calls"], v["misses"], v["timed"]) for k, v in frames.items()} == {
        "0": (80, 1, 78),  # 2 entries: each one's first call follows its compile
        "1": (20, 0, 19),
        "2": (20, 0, 19),
        "3": (2, 1, 0),
    }
    assert found["unattributed"] == 2  # limited's calls at the limit: no compiled code ran
    # Every lookup is timed, a miss or unattributed (a frame's first compile has no entry to check: no lookup).
    assert found["lookups"] == sum(v["timed"] + v["misses"] for v in frames.values()) + found["unattributed"]
    for v in (frames["0"], frames["1"], frames["2"]):
        assert 0 < v["p10_us"] <= v["median_us"] <= v["p90_us"] <= v["max_us"] < 1000
        assert v["total_us"] >= v["median_us"] * v["timed"] / 2
    assert frames["3"]["median_us"] is None  # nothing timed: none, not 0


def test_a_lookup_is_timed_by_its_own_duration_on_its_own_thread():
    events = [
        (REGION + "0/0", 1, 0, 100_000),  # the first call (no lookup: the cache was empty)
        (LOOKUP, 1, 200_000, 205_000),
        (LOOKUP, 2, 201_000, 231_000),  # another thread's lookup, in between
        (REGION + "0/0", 1, 206_000, 300_000),
        (REGION + "0/0", 2, 232_000, 300_000),
        (LOOKUP, 1, 400_000, 403_000),  # nothing compiled ran after it
    ]
    found = summarize(events)
    assert found["frames"]["0"]["calls"] == 3
    assert found["frames"]["0"]["timed"] == 2
    assert (found["frames"]["0"]["p10_us"], found["frames"]["0"]["max_us"], found["frames"]["0"]["total_us"]) == (7.5, 30.0, 35.0)
    assert found["unattributed"] == 1


def test_a_resume_function_inside_its_callers_region_gets_its_own_lookup():
    events = [
        (LOOKUP, 1, 0, 10),
        (REGION + "0/0", 1, 11, 100),
        (LOOKUP, 1, 20, 27),
        (REGION + "1/0", 1, 28, 90),
    ]
    # Both regions are first runs of their entries here: misses, since a lookup came before each.
    found = summarize(events)
    assert (found["frames"]["0"]["misses"], found["frames"]["1"]["misses"]) == (1, 1)
    again = summarize([*events, (LOOKUP, 1, 200, 207), (REGION + "0/0", 1, 208, 300), (LOOKUP, 1, 220, 222), (REGION + "1/0", 1, 223, 290)])
    assert again["frames"]["0"]["median_us"] == 0.007
    assert again["frames"]["1"]["median_us"] == 0.002


def test_quantiles_interpolate_like_numpy():
    assert _quantile([1, 2, 3, 4], 0.5) == 2.5
    assert _quantile([10], 0.9) == 10
    assert _quantile([0, 10], 0.1) == 1


def _measured(frame: str = "0", **changes: object) -> dict:
    return {"frame": frame, "calls": 10, "misses": 1, "timed": 8, "median_us": 3.0, "p10_us": 2.0, "p90_us": 5.0,
            "max_us": 9.0, "total_us": 26.0} | changes


@pytest.mark.parametrize(
    "changes",
    [
        {"calls": -1},
        {"calls": True},
        {"timed": 11},  # more timed than calls
        {"median_us": None},  # timed lookups without figures
        {"timed": 0},  # figures without timed lookups
        {"p90_us": float("nan")},
        {"max_us": "9"},
        {"frame": ""},
    ],
)
def test_malformed_figures_are_refused(changes: dict):
    with pytest.raises((ValueError, TypeError)):
        guard_time_from_dict(_measured(**changes), "frames.0")


def test_the_childs_file_is_read_and_its_error_kept(tmp_path: Path):
    assert read_guard_time(tmp_path) is None  # the script did not end by itself
    (tmp_path / "guard_time.json").write_text(json.dumps({"schema": SCHEMA, "frames": {"0": _measured()}}))
    measured = read_guard_time(tmp_path)
    assert measured is not None and measured.error is None and measured.frames[0].frame == FrameId("0")
    (tmp_path / "guard_time.json").write_text(json.dumps({"schema": SCHEMA, "error": PROFILER_TAKEN}))
    assert read_guard_time(tmp_path) == Measured((), PROFILER_TAKEN)
    (tmp_path / "guard_time.json").write_text("{not json")
    broken = read_guard_time(tmp_path)
    assert broken is not None and broken.error is not None and "unreadable" in broken.error


def _function(name: str, *frames: FrameId, latency: float | None = 325.0) -> FunctionSummary:
    return FunctionSummary(name, "/w/s.py", 3, tuple(frames), 1, (), torch_metrics=(TorchMetrics(None, guard_latency_us=latency),))


def _run(*functions: FunctionSummary, measured: bool | None = True, why: str | None = None) -> Run:
    return Run(tuple(functions), ParseStats(), source="run", guards_measured=measured, guards_unmeasured=why)


def test_frames_go_to_the_functions_of_the_main_process_holding_them():
    frames = Measured(tuple(guard_time_from_dict(_measured(frame), frame) for frame in ("0", "1")))
    f = _function("f", FrameId("0"))
    g = _function("g", FrameId("1", Process.of_rank(1)))  # a rank's frame 1 is not the main process's
    placed = with_guard_times([f, g], frames)
    assert [len(p.guard_times) for p in placed] == [1, 0]


def test_the_record_keeps_the_figures_and_refuses_bad_ones():
    f = replace(_function("f", FrameId("0")), guard_times=(guard_time_from_dict(_measured(), "x"),))
    run = _run(f)
    data = json.loads(json.dumps(record_dict(run_report(run))))
    assert run_from_dict(data) == run
    plain = json.loads(json.dumps(record_dict(run_report(_run(_function("f", FrameId("0")), measured=None)))))
    assert "guards_measured" not in plain and "guard_times" not in plain["functions"][0]
    assert run_from_dict(plain).guards_measured is None  # a run/2 record without them reads as not asked
    data["functions"][0]["guard_times"][0]["calls"] = -3
    with pytest.raises(InputError, match="guard_times"):
        run_from_dict(data)
    data["functions"][0]["guard_times"][0]["calls"] = 10
    data["guards_measured"] = "yes"
    with pytest.raises(InputError, match="guards_measured"):
        run_from_dict(data)


def test_words_say_what_a_call_paid_and_what_was_not_measured():
    measured = GuardTime(FrameId("0"), 412, 2, 410, 38.0, 30.0, 51.0, 90.0, 15580.0)
    f = replace(_function("f", FrameId("0")), guard_times=(measured,))
    line = measured_guards_sentence(_run(f), f)
    assert line is not None
    assert "412 calls, median 38 us (p90 51 us) per call" in line and "against torch's compile-time 325 us" in line
    assert "2 lookups found no entry and recompiled" in line
    idle = _function("g", FrameId("1"))
    assert "no call ran its compiled code" in str(measured_guards_sentence(_run(idle), idle))
    rank = _function("h", FrameId("0", Process.of_rank(1)))
    assert "main process only" in str(measured_guards_sentence(_run(rank), rank))
    assert measured_guards_sentence(_run(f, measured=None), f) is None  # not asked: nothing said
    assert unmeasured_guards_sentence(_run(f, measured=None)) is None
    assert "did not end by itself" in str(unmeasured_guards_sentence(_run(f, measured=False)))
    assert "its own profiler" in str(unmeasured_guards_sentence(_run(f, measured=False, why=PROFILER_TAKEN)))
    untimed = replace(f, guard_times=(GuardTime(FrameId("0"), 2, 1, 0),))
    assert "none of them found a cache entry to time" in str(measured_guards_sentence(_run(untimed), untimed))


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "yaml"])
def test_every_format_of_the_run_report_carries_them(fmt: str):
    measured = GuardTime(FrameId("0"), 412, 0, 411, 38.0, 30.0, 51.0, 90.0, 15580.0)
    run = _run(replace(_function("f", FrameId("0")), guard_times=(measured,)))
    text = render(run_report(run), fmt)
    assert ("median 38 us" in text) if fmt in ("table", "markdown") else ("median_us" in text and "411" in text)
