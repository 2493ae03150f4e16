"""Compile time per function and the near-limit warning, on run folders recorded with torch's ledger
(tests/fixtures/timing/README.md) and on recorded logs without one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.ids import FrameId
from guarddiag.ledger import read_ledger
from guarddiag.limits import LimitBudget, limit_budget
from guarddiag.model import Run
from guarddiag.pipeline import LogReader, parse_logs
from guarddiag.render import markdown, table
from guarddiag.render.summary import function_detail_lines
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import FIXTURES, LOGS

TIMING = FIXTURES / "timing"


def _ledger_times(folder: Path) -> dict[str, list[float]]:
    """Each function's compile seconds, in the order torch recorded them, read straight from the file."""
    times: dict[str, list[float]] = {}
    for line in (folder / "torch.compiles.jsonl").read_text().splitlines()[1:]:
        record = json.loads(line)
        if record["name"] is not None:
            times.setdefault(record["name"], []).append(record["compile_s"])
    return times


def _run(folder: Path, drop: tuple[str, ...] = ()) -> Run:
    """The folder read as `guarddiag run` reads it; ``drop``: ledger keys removed (an older ledger)."""
    ledger = read_ledger(folder / "torch.compiles.jsonl")
    assert ledger
    if drop:
        ledger = tuple(replace(r, **{k: None for k in drop}) for r in ledger)
    with (folder / "torch.log").open() as fh:
        functions, stats = LogReader(ledger=ledger).read(fh).result()
    return Run(functions=functions, parse=stats, source="run")


@pytest.mark.parametrize("folder", ["near_limit-2.13", "near_limit-2.4"])
def test_a_functions_time_is_torchs_seconds_and_its_recompiles_are_all_but_the_first(folder: str):
    run = _run(TIMING / folder)
    (step,) = run.functions
    seconds = _ledger_times(TIMING / folder)["step"]
    assert step.compiles == len(seconds) == 7
    assert step.compile_s == pytest.approx(sum(seconds)) and step.compile_s > 0
    assert step.recompile_s == pytest.approx(sum(seconds[1:]))
    assert (run.compile_s, run.recompile_s) == (step.compile_s, step.recompile_s)
    assert step.recompile_limit == 8  # torch 2.4 calls it cache_size_limit


def test_after_a_reset_the_first_compile_under_the_new_id_counts_as_a_recompile():
    run = _run(TIMING / "reset_and_failures-2.13")
    f = {f.name: f for f in run.functions}
    seconds = _ledger_times(TIMING / "reset_and_failures-2.13")
    assert f["scale"].compiles == 2 and f["scale"].recompile_s == pytest.approx(seconds["scale"][1])
    # A compile that raised and one Dynamo skipped took time too; neither is a recompile.
    assert f["strict"].compile_s == pytest.approx(seconds["strict"][0]) and f["strict"].recompile_s == 0
    assert f["noop"].compile_s == pytest.approx(seconds["noop"][0])
    assert run.compile_s == pytest.approx(sum(sum(s) for s in seconds.values()))


def test_a_ledger_without_times_leaves_them_unknown_and_the_report_silent():
    run = _run(TIMING / "near_limit-2.13", drop=("compile_s",))
    (step,) = run.functions
    assert (step.compile_s, step.recompile_s, run.compile_s) == (None, None, None)
    assert step.recompile_limit == 8
    assert "compile time" not in table.render(run_report(run)) and "compile s" not in markdown.render(run_report(run))


def test_a_ledger_that_misses_a_compile_gives_no_time():
    ledger = read_ledger(TIMING / "near_limit-2.13" / "torch.compiles.jsonl")
    assert ledger
    with (TIMING / "near_limit-2.13" / "torch.log").open() as fh:
        (step,), _ = LogReader(ledger=ledger[:-1]).read(fh).result()
    assert step.compiles == 7 and step.compile_s is None


def test_a_parsed_log_has_no_times_and_no_made_up_total():
    run = parse_logs([str(LOGS / "torch-2.13.0" / "recompile_limit.log")])
    assert all(f.compile_s is None and f.recompile_limit is None for f in run.functions)
    text = table.render(run_report(run))
    assert "compile time" not in text and "compile s" not in markdown.render(run_report(run))
    assert "near the recompile limit" not in text  # it hit the limit: that sentence says so


def test_the_table_gives_the_run_total_and_each_functions_share_in_recompiles():
    run = _run(TIMING / "near_limit-2.13")
    (step,) = run.functions
    lines = table.render(run_report(run)).splitlines()
    share = f"{step.recompile_s / step.compile_s:.0%}"
    assert lines[1] == f"compile time {step.compile_s:.2f} s, {step.recompile_s:.2f} s ({share}) of it in recompiles"
    assert f"  compile time {step.compile_s:.2f} s, {step.recompile_s:.2f} s ({share}) of it in 6 recompiles" in lines
    table_lines = lines[lines.index("") + 1 : lines.index("", lines.index("") + 1)]
    assert table_lines[0].split() == ["function", "compiles", "recompiles", "limit", "hit", "graph", "breaks"]
    assert max(len(line) for line in [lines[1], *table_lines]) <= 100  # no column for the time: details carry it
    md = markdown.render(run_report(run))
    (header,) = [line for line in md.splitlines() if line.startswith("| function")]
    assert header.split("|")[-2].strip() == "compile s"
    assert f"- compile time {step.compile_s:.2f} s" in md


def test_seven_of_eight_variants_is_said_once_with_the_limit_torch_had():
    run = _run(TIMING / "near_limit-2.13")
    (step,) = run.functions
    assert limit_budget(run, step) == LimitBudget(7, 8, "torch")
    text = table.render(run_report(run))
    assert text.count("near the recompile limit") == 1
    assert (
        "  near the recompile limit: 7 of 8 variants compiled (recompile_limit 8 at its last compile); one more "
        "compiles, then new variants run eagerly (or raise, with fail_on_recompile_limit_hit); the limit counts "
        "per code object, for all its callers"
    ) in text.splitlines()
    assert markdown.render(run_report(run)).count("- near the recompile limit: 7 of 8") == 1


def test_the_limit_comes_from_the_record_then_the_runs_flag_then_torchs_default():
    run = _run(TIMING / "near_limit-2.13")
    unknown = replace(run.functions[0], recompile_limit=None)
    assert limit_budget(replace(run, config={"cache_size_limit": 7}), unknown) == LimitBudget(7, 7, "flag")
    assert limit_budget(replace(run, config={"recompile_limit": 64}), unknown) is None  # far from it
    default = limit_budget(run, unknown)
    assert default == LimitBudget(7, 8, "default")
    assert any("(torch's default of 8, unless the script sets recompile_limit)" in line for line in function_detail_lines(unknown, run))
    at = limit_budget(run, replace(run.functions[0], recompile_limit=7))
    assert at == LimitBudget(7, 7, "torch") and at.at_limit
    assert "  at the recompile limit: 7 of 7 variants compiled (recompile_limit 7 at its last compile); new variants run eagerly" in (
        table.render(run_report(replace(run, functions=(replace(run.functions[0], recompile_limit=7),))))
    )


def test_no_warning_far_from_the_limit_across_a_reset_or_for_a_failed_attempt():
    run = _run(TIMING / "near_limit-2.13")
    step = run.functions[0]
    assert limit_budget(run, replace(step, recompile_limit=9)) is None  # 7 of 9: two left
    assert limit_budget(run, replace(step, frame_ids=(FrameId("0"), FrameId("0~1")))) is None  # counts restart at a reset
    failed = _run(TIMING / "reset_and_failures-2.13")
    assert all(limit_budget(failed, replace(f, recompile_limit=2)) is None for f in failed.functions)


def test_the_record_keeps_the_times_and_an_older_record_still_loads():
    run = _run(TIMING / "near_limit-2.13")
    data = record_dict(run_report(run))
    (f,) = data["functions"]
    assert (f["compile_s"], f["recompile_s"], f["recompile_limit"]) == (
        run.functions[0].compile_s, run.functions[0].recompile_s, 8
    )
    assert data["totals"]["compile_s"] == run.compile_s
    assert run_from_dict(json.loads(json.dumps(data))) == run
    for key in ("compile_s", "recompile_s", "recompile_limit"):
        del f[key]
    old = run_from_dict(data)
    assert old.functions[0].compile_s is None and old.compile_s is None
    f["compile_s"] = -1
    with pytest.raises(Exception, match="compile_s"):
        run_from_dict(data)


def test_whose_code_called_a_function_comes_from_the_ledger_and_the_record_keeps_it():
    # The recorded ledger names no caller (it predates them): not known, and the record has no key for it.
    run = _run(TIMING / "near_limit-2.13")
    assert run.functions[0].callers == () and "callers" not in record_dict(run_report(run))["functions"][0]
    # A library's generate() calling the compiled function, then the user's script: packages by name, "" the user's.
    ledger = read_ledger(TIMING / "near_limit-2.13" / "torch.compiles.jsonl")
    assert ledger
    callers = ["/home/user/venv/lib/python3.11/site-packages/transformers/generation/utils.py", "/home/user/project/train.py"]
    ledger = tuple(replace(r, caller=callers[min(i, 1)]) for i, r in enumerate(ledger))
    with (TIMING / "near_limit-2.13" / "torch.log").open() as fh:
        functions, stats = LogReader(ledger=ledger).read(fh).result()
    called = Run(functions=functions, parse=stats, source="run")
    assert called.functions[0].callers == ("transformers", "")
    data = json.loads(json.dumps(record_dict(run_report(called))))
    assert data["functions"][0]["callers"] == ["transformers", ""]
    assert run_from_dict(data) == called
