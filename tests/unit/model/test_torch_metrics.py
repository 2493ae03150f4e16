"""torch's own figures per compile (guard count and latency, cache sizes, recompile reason, user contexts) from
the ledger into the model, the record and the reports, and each recompile's cause checked against torch's
``recompile_reason``: on run folders recorded with the ledger that keeps them (tests/fixtures/torchmetrics/README.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.ids import CompileId
from guarddiag.ledger import CompileRecord, read_ledger, torch_figures
from guarddiag.model import Run
from guarddiag.pipeline import LogReader
from guarddiag.render import render
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from guarddiag.torchcheck import reason_disagreements
from tests.conftest import FIXTURES

METRICS = FIXTURES / "torchmetrics"
FOLDERS = ("contexts-2.13", "tensor_shape-2.13", "reset_and_failures-2.13")
# Every figure the ledger keeps besides the compile's own (an older ledger has none of them).


def _run(folder: Path, edit=None) -> Run:  # noqa: ANN001
    """The folder read as `guarddiag run` reads it; ``edit(record) -> record`` changes torch's records first."""
    ledger = read_ledger(folder / "torch.compiles.jsonl")
    assert ledger
    if edit is not None:
        ledger = tuple(edit(r) for r in ledger)
    with (folder / "torch.log").open() as fh:
        functions, stats = LogReader(ledger=ledger).read(fh).result()
    return Run(functions=functions, parse=stats, source="run", torch_version="2.13.0+cpu")


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "torch.compiles.jsonl").read_text().splitlines()[1:]]


def test_each_compile_carries_torchs_own_figures_as_the_ledger_holds_them():
    (step,) = _run(METRICS / "contexts-2.13").functions
    raw = _records(METRICS / "contexts-2.13")
    assert [str(m.compile_id) for m in step.torch_metrics] == ["0/0", "0/1", "0/2"]
    assert [m.guard_count for m in step.torch_metrics] == [r["guard_count"] for r in raw] == [10, 10, 10]
    assert [m.guard_latency_us for m in step.torch_metrics] == [r["guard_latency_us"] for r in raw]
    assert [m.cache_size for m in step.torch_metrics] == [0, 1, 2]
    assert [m.user_contexts for m in step.torch_metrics] == [("epoch 0",), ("epoch 2",), ("epoch 3",)]
    assert step.torch_metrics[0].recompile_reason is None  # a first compile: no reason
    assert step.torch_metrics[2].recompile_reason == raw[2]["recompile_reason"]
    assert "\nUser stack trace:\n" in step.torch_metrics[2].recompile_reason


def test_a_compile_after_a_reset_is_placed_in_its_cache_generation_and_a_skipped_frame_has_no_guards():
    functions = {f.name: f for f in _run(METRICS / "reset_and_failures-2.13").functions}
    assert [str(m.compile_id) for m in functions["scale"].torch_metrics] == ["2/0", "0~1/0"]
    assert [str(e.compile_id) for e in functions["scale"].recompile_events] == ["0~1/0"]
    assert [m.guard_count for m in functions["noop"].torch_metrics] == [None]  # torch skipped it: no entry
    assert functions["noop"].torch_metrics[0].cache_size == 0  # known, and 0: not "absent"


def test_an_older_ledger_gives_no_figures_absent_not_zero_and_its_record_is_unchanged():
    # A ledger line written before the figures were kept holds none: its record has no torch figures.
    assert torch_figures(CompileId.parse("0/0"), None, None, None, None, None, None, None) is None
    older = _run(METRICS / "contexts-2.13", lambda r: replace(r, torch=None))
    assert all(f.torch_metrics == () for f in older.functions)
    assert all("torch_metrics" not in f for f in record_dict(run_report(older))["functions"])
    assert "torch:" not in render(run_report(older), "table")


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_figures_go_through_the_record_and_back(folder: str):
    run = _run(METRICS / folder)
    back = run_from_dict(json.loads(json.dumps(record_dict(run_report(run)))))
    assert [f.torch_metrics for f in back.functions] == [f.torch_metrics for f in run.functions]
    assert any(f.torch_metrics for f in back.functions)


@pytest.mark.parametrize("folder", FOLDERS)
def test_torchs_recompile_reason_agrees_with_what_guarddiag_read_on_real_runs(folder: str):
    report = run_report(_run(METRICS / folder))
    reasons = [m.recompile_reason for f in report.run.functions for m in f.torch_metrics if m.recompile_reason]
    assert reasons or folder.startswith("reset")  # a reset's recompile is no guard failure: torch gives no reason
    assert report.disagreements == ()
    assert "disagreements" not in json.loads(render(report, "json"))


def _reason(compile_id: str, reason: str):  # noqa: ANN202
    def edit(r: CompileRecord) -> CompileRecord:
        if r.compile_id != CompileId.parse(compile_id) or r.torch is None:
            return r
        return replace(r, torch=replace(r.torch, recompile_reason=reason))

    return edit


def test_a_reason_torch_gives_otherwise_for_the_same_entry_is_a_disagreement_said_in_every_format():
    report = run_report(_run(METRICS / "contexts-2.13", _reason("0/2", "0/1: mode == 'z'  # elsewhere\nUser stack trace:\n  x")))
    (d,) = report.disagreements
    assert (str(d.compile_id), d.entry, d.torch_reason, d.read) == ("0/2", "0/1", "mode == 'z'  # elsewhere", d.read)
    assert d.read is not None and d.read.startswith("mode == 'b'")
    assert d.function == report.run.functions[0].key
    for fmt in ("table", "markdown"):
        text = render(report, fmt)
        assert "torch's own record of recompile 0/2 of step" in text and "mode == 'z'" in text, text
    (shown,) = json.loads(render(report, "json"))["disagreements"]
    assert shown["entry"] == "0/1" and shown["torch_reason"] == "mode == 'z'  # elsewhere" and shown["function"]["name"] == "step"


def test_a_reason_against_an_entry_guarddiag_read_no_failure_of_is_a_disagreement():
    report = run_report(_run(METRICS / "tensor_shape-2.13", _reason("0/1", "0/7: ___check_obj_id(L['self'], 1)")))
    (d,) = report.disagreements
    assert (str(d.compile_id), d.entry, d.read) == ("0/1", "0/7", None)
    assert "a failure guarddiag did not read from the log" in render(report, "table")


def test_torchs_own_unexplained_recompile_is_nothing_to_compare():
    report = run_report(_run(METRICS / "contexts-2.13", _reason("0/1", "Unable to find recompilation reasons")))
    assert report.disagreements == ()


def test_the_run_report_shows_the_cache_size_and_the_scripts_contexts_only_in_a_recompiling_functions_details():
    report = run_report(_run(METRICS / "contexts-2.13"))
    table = render(report, "table")
    assert "torch: 2 entries in the cache before its last compile" in table
    assert "the script's recompile contexts: epoch 0; epoch 2; epoch 3" in table
    assert "torch: 2 entries in the cache before" in render(report, "markdown")
    # Its 11 guards are too few for the guard section; the figures are in the record's guard cost.
    assert "guard checks" not in table and "1 other compiled function with fewer than 100 guards" not in table
    (cost,) = json.loads(render(report, "json"))["guard_cost"]
    latency = report.run.functions[0].torch_metrics[-1].guard_latency_us
    assert cost["last_entry"]["torch_guard_count"] == 10 and cost["last_entry"]["leaves"] == 11
    assert abs(cost["last_entry"]["latency_us"] - latency) < 1
    # A function shown for a failure only has no guards to show, and an empty cache says nothing.
    failures = render(run_report(_run(METRICS / "reset_and_failures-2.13")), "table")
    assert "strict" in failures and "entries in the cache" not in failures


def test_a_run_that_kept_a_trace_names_it_in_the_footer_and_the_record():
    run = replace(_run(METRICS / "contexts-2.13"), log_path="/runs/x/torch.log", trace_path="/runs/x/trace")
    assert render(run_report(run), "table").splitlines()[-1].startswith("torch trace: /runs/x/trace (open it with tlparse")
    assert "/runs/x/trace" in render(run_report(run), "markdown")
    record = record_dict(run_report(run))
    assert record["trace_path"] == "/runs/x/trace" and run_from_dict(record).trace_path == "/runs/x/trace"
    assert "trace_path" not in record_dict(run_report(replace(run, trace_path=None)))


def test_reason_disagreements_of_a_parsed_log_are_none():
    with (METRICS / "contexts-2.13" / "torch.log").open() as fh:
        functions, stats = LogReader().read(fh).result()
    assert reason_disagreements(Run(functions=functions, parse=stats)) == ()


def test_the_figures_follow_their_function_into_another_process_and_a_merged_record():
    from guarddiag.ids import Process
    from guarddiag.merge import in_process, retagged

    (step,) = _run(METRICS / "contexts-2.13").functions
    child = in_process(step, Process.of_child(1))
    assert [str(m.compile_id) for m in child.torch_metrics] == ["child1:0/0", "child1:0/1", "child1:0/2"]
    assert [m.compile_id.process for m in retagged(child, Process.of_rank(1)).torch_metrics] == [Process.of_rank(1)] * 3
    checked = replace(_run(METRICS / "contexts-2.13"), functions=(child,))
    assert run_report(checked).disagreements == ()  # the check matches within the function, whatever its process
