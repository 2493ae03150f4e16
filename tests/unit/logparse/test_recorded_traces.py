"""Every recorded TORCH_TRACE (tests/fixtures/traces: torch 2.13.0 and 2.4.1, each beside the text log of
the same run and torch's own counts) read by ``parse`` as a user gives it: the counts torch's metrics give,
per function and per rank, and (torch 2.13) the model the text log of the same run gives, cause by cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guarddiag.pipeline import parse_logs
from tests.conftest import ROOT

TRACES = ROOT / "tests" / "fixtures" / "traces"
FIXTURES = sorted(p for p in TRACES.glob("torch-*/**/*") if p.is_dir() and p.with_suffix(p.suffix + ".truth.json").exists())
# What a text log shows and a trace cannot: calls a compiler stance refused (the script printed them; torch
# records nothing of them), and a torchrun job's compiles before init_process_group, which the text log
# cannot tell apart by rank and the trace keeps in each rank's file.
NOT_IN_THE_TRACE = {"printed_fail", "trace_ranks"}


def _truth(folder: Path) -> dict:
    return json.loads(folder.with_suffix(folder.suffix + ".truth.json").read_text())


def _version(folder: Path) -> str:
    return next(p.name for p in folder.parents if p.name.startswith("torch-")).removeprefix("torch-")


def _counts(functions: list[dict]) -> dict[tuple[str, int], tuple[int, int]]:
    return {(f["co_name"], f["co_firstlineno"]): (f["compiles"], f.get("refused", 0)) for f in functions}


def test_every_kind_of_fixture_is_there():
    names = {(_version(f), f.name) for f in FIXTURES}
    assert {("2.13.0", "recompile_limit"), ("2.13.0", "limit_raised"), ("2.13.0", "trace_ranks"), ("2.13.0", "trace_shape2"),
            ("2.4.1", "recompile_limit"), ("2.4.1", "graph_break")} <= names, names


@pytest.mark.parametrize("folder", FIXTURES, ids=lambda f: f"{_version(f)}/{f.name}")
def test_a_trace_counts_what_torch_counted(folder):
    run = parse_logs([str(folder)])
    truth = _truth(folder)
    blind = "limit_refusals" in run.parse.trace_gaps
    # torch 2.4 records no refusal; a trace with no second compile of a frame (a reset compiles anew) has none to miss.
    assert blind == (_version(folder) == "2.4.1" and any(e.compile_id.number for f in run.functions for e in f.recompile_events))
    if "ranks" in truth:  # a torchrun job: torch's counts per rank, the trace's per process
        for rank, of_rank in truth["ranks"].items():
            mine = {(f.name, f.line): (f.compiles, len(f.limit_hits)) for f in run.functions if f.process.rank == int(rank)}
            assert mine == _counts(of_rank["functions"]), rank
        return
    mine = {(f.name, f.line): (f.compiles, 0 if blind else len(f.limit_hits)) for f in run.functions}
    assert mine == {k: (c, 0 if blind else r) for k, (c, r) in _counts(truth["functions"]).items()}
    assert run.torch_compiles == sum(c for c, _ in _counts(truth["functions"]).values())
    assert run.parse.unrecognized == 0, run.parse.unrecognized_samples


@pytest.mark.parametrize("folder", [f for f in FIXTURES if _version(f) == "2.13.0" and f.name not in NOT_IN_THE_TRACE],
                         ids=lambda f: f.name)
def test_a_trace_gives_the_causes_its_text_log_gives(folder):
    trace, log = parse_logs([str(folder)]), parse_logs([str(folder.with_suffix(folder.suffix + ".log"))])

    def model(run):  # what both hold; a trace holds more (compile times, callers, why an attempt failed)
        return [(f.name, f.line, f.process, f.compiles, f.recompiles, f.limit_hit, [(h.limit, h.value) for h in f.limit_hits],
                 [[(c.category, c.source, c.text) for c in e.causes] for e in f.recompile_events],
                 len(f.graph_breaks)) for f in sorted(run.functions, key=lambda f: (f.process, f.name, f.line))]

    assert model(trace) == model(log)
    assert trace.torch_version == "2.13.0+cpu"


def test_a_24_trace_names_each_function_though_its_start_record_ends_in_torch():
    # torch 2.4's dynamo_start stack ends in its own convert_frame: its metrics name the code.
    run = parse_logs([str(TRACES / "torch-2.4.1" / "graph_break")])
    assert sorted(f.name for f in run.functions) == ["forward", "torch_dynamo_resume_in_forward_at_31"]
    (forward,) = [f for f in run.functions if f.name == "forward"]
    assert len(forward.graph_breaks) == 2 and "print" in forward.graph_breaks[0].reason  # from its restart reasons

