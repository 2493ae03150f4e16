"""What a function's guards cost (issue 28): each cache entry's guards counted by the object they sit on, torch's
compile-time measurement of a check from the log, the trace and torch's record, the range a call pays, in the
record and every format; on a recorded run of tests/fixtures/torchmetrics/guard_blocks.py (6 blocks, 3 entries)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from guarddiag.guardcost import guard_cost, origins
from guarddiag.ids import CompileId
from guarddiag.ledger import read_ledger
from guarddiag.logparse.events import GuardListing
from guarddiag.logparse.guards import GuardOwners
from guarddiag.logparse.parser import LogParser
from guarddiag.model import EntryGuards, FunctionSummary, GuardOrigin, ParseStats, Run
from guarddiag.pipeline import LogReader, parse_logs
from guarddiag.render import render
from guarddiag.render.words import micros
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import FIXTURES

BLOCKS = FIXTURES / "torchmetrics" / "guard_blocks-2.13"
BLOCKS_PATH = "L['self']._modules['blocks']"


def _run() -> Run:
    """The folder read as `guarddiag run` reads it: its log with torch's record of each compile."""
    with (BLOCKS / "torch.log").open() as fh:
        functions, stats = LogReader(ledger=read_ledger(BLOCKS / "torch.compiles.jsonl")).read(fh).result()
    return Run(functions=functions, parse=stats, source="run", torch_version="2.13.0+cpu")


def _latencies_in_log() -> list[float]:
    lines = (BLOCKS / "torch.log").read_text().splitlines()
    return [float(line.split("= ")[1].split()[0]) for line in lines if "Guard eval latency = " in line]


def test_each_entry_has_its_guards_torchs_latency_and_where_they_come_from():
    (f,) = _run().functions
    assert [str(e.compile_id) for e in f.guard_entries] == ["0/0", "0/1", "0/2"]
    assert [e.latency_us for e in f.guard_entries] == _latencies_in_log()
    for entry in f.guard_entries:
        # Every leaf of the tree, whatever a counting parse keeps: as many as the listing has leaf lines.
        assert entry.leaves == 279
        top = entry.origins[0]
        assert (top.source, top.guards, top.members, top.rest) == (BLOCKS_PATH, 236, 6, False)
        assert GuardOrigin("L['self']", 19, None, True) in entry.origins
        assert [o.guards for o in entry.origins] == sorted((o.guards for o in entry.origins), reverse=True)


def test_the_logs_latency_is_torchs_own_figure_and_the_listing_counts_torchs_guards():
    """torch's record holds the same measurement, cut to whole microseconds (``int(latency)``, so 206.99 is 206)."""
    cost = guard_cost(_run().functions[0])
    assert cost is not None and len(cost.entries) == 3
    for e in cost.entries:
        assert e.torch is not None and e.listed is not None
        assert abs(e.listed.latency_us - e.torch.guard_latency_us) < 1
        assert e.torch_guards == 279 == e.leaves


def test_a_call_pays_from_the_cheapest_entry_to_every_entry():
    cost = guard_cost(_run().functions[0])
    figures = _latencies_in_log()
    assert cost.per_call is not None
    assert (cost.per_call.entries, cost.per_call.measured) == (3, 3)
    assert cost.per_call.low_us == min(figures) and cost.per_call.high_us == pytest.approx(sum(figures))


def test_a_trace_of_the_same_run_gives_the_same_guards():
    traced = {f.name: f for f in parse_logs([str(BLOCKS / "trace")]).functions}
    (f,) = _run().functions
    assert traced[f.name].guard_entries == f.guard_entries
    # The trace's own record of the compiles: torch's guard count and the same latency.
    assert [m.guard_count for m in traced[f.name].torch_metrics if m.guard_count] == [279, 279, 279]


def test_the_report_names_where_the_guards_are_and_what_a_call_pays_in_every_format():
    report = run_report(_run())
    low, high = min(_latencies_in_log()), sum(_latencies_in_log())
    table = render(report, "table")
    assert "guard checks: each call of a compiled function checks the guards of its cache entries" in table
    assert (
        "forward (torchmetrics/guard_blocks.py:29): 3 cache entries of 279 guards (torch built them from 279); one check "
        in table
    )
    assert f"a call pays {micros(low)} when it hits the entry it hit last, up to {micros(high)} when it checks all 3" in table
    assert "where the guards of its last entry are: `self.blocks` (6 items, about 39 guards each): 236 (84%); `self`, apart" in table
    markdown = render(report, "markdown")
    assert "### Guard checks" in markdown and "`self.blocks` (6 items, about 39 guards each): 236 (84%)" in markdown
    (cost,) = json.loads(render(report, "json"))["guard_cost"]
    assert cost["per_call"] == {"entries": 3, "timed": 3, "low_us": low, "high_us": pytest.approx(high)}
    assert cost["last_entry"] == {"compile_id": "0/2", "leaves": 279, "torch_guard_count": 279, "latency_us": _latencies_in_log()[-1]}
    assert "guard_cost" in render(report, "yaml")


def test_the_record_keeps_each_entrys_guards_and_refuses_wrong_values():
    record = record_dict(run_report(_run()))
    back = run_from_dict(json.loads(json.dumps(record)))
    assert back.functions[0].guard_entries == _run().functions[0].guard_entries
    for field, value in (("latency_us", -1), ("latency_us", "fast"), ("leaves", 2.5), ("origins", {"a": 1})):
        bad = json.loads(json.dumps(record))
        bad["functions"][0]["guard_entries"][0][field] = value
        with pytest.raises(Exception, match=f"guard_entries\\[0\\].{field}"):
            run_from_dict(bad)
    old = json.loads(json.dumps(record))
    del old["functions"][0]["guard_entries"]
    assert run_from_dict(old).functions[0].guard_entries == ()  # a record before issue 28: not known, not 0


def test_the_owners_of_leaves_are_the_managers_above_them():
    owners = GuardOwners()
    tree = [
        "+- RootGuardManager",
        "| +- GLOBAL_STATE: ___check_global_state()",
        "| +- GuardManager: source=L['m'], accessed_by=FrameLocalsGuardAccessor(key='m'), type=<class 'M'>",
        "| | +- TYPE_MATCH: ___check_type_id(L['m'], 1)",
        "| | +- GuardManager: source=L['m']._modules['0'], accessed_by=DictGetItemGuardAccessor('0')",
        "| | | +- ID_MATCH: ___check_obj_id(L['m']._modules['0'], 2)",
        "| | +- NO_TENSOR_ALIASING",
        "| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x')",
        "| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor)",
    ]
    for line in tree:
        start = line.find("+- ")
        text = line[start + 3 :]
        colon = text.find(":")
        owners.line(start // 2, text[:colon] if colon > 0 else text, text, colon)
    assert dict(owners.whole()) == {"": 1, "L['m']": 2, "L['m']._modules['0']": 1, "L['x']": 1}


def test_a_counting_parse_and_a_whole_one_count_the_same_leaves():
    keep = LogReader.__init__.__kwdefaults__["guards"]
    log = (BLOCKS / "torch.log").read_text().splitlines()

    def owners(parser: LogParser) -> list[tuple]:
        return [(str(e.compile_id), e.owners, e.latency_us) for e in parser.parse(log) if isinstance(e, GuardListing)]

    assert owners(LogParser(keep_guards=keep)) == owners(LogParser(keep_guards=None))


def test_origins_narrow_an_object_to_its_part_holding_most_guards():
    layers = [(f"L['self']._modules['layers']._modules['{i}']._parameters['weight']", 10) for i in range(5)]
    found = origins([*layers, ("L['self']", 6), ("L['x']", 3), ("", 4), ("G['torch']", 2)], top=3)
    assert found == (
        GuardOrigin("L['self']._modules['layers']", 50, 5),
        GuardOrigin("L['self']", 6, None, rest=True),
        GuardOrigin("", 4),
    )
    # No part holds most of it: the object itself; a source of another shape is one object.
    assert origins([("L['a'].x", 3), ("L['a'].y", 3), ("___f(1)", 1)]) == (GuardOrigin("L['a']", 6), GuardOrigin("___f(1)", 1))
    # A source that wraps an object (its type, its __dict__) is counted on the object.
    assert origins([("dict(type(L['m'].config).__dict__)['map']", 4), ("L['m'].config", 2)]) == (GuardOrigin("L['m'].config", 6),)


def test_a_flat_listing_has_no_leaves_and_no_origins():
    (f, *_) = parse_logs([str(FIXTURES / "logs" / "torch-2.1.2" / "class_attribute.log")]).functions
    assert f.guard_entries and all(e.leaves is None and e.origins == () for e in f.guard_entries)
    assert all(e.latency_us is None for e in f.guard_entries)  # torch < 2.6 logs no latency


def _heavy(source: str) -> Run:
    entry = EntryGuards(CompileId("0", 0), 500, 250.0, (GuardOrigin(source, 450, 9), GuardOrigin("", 50)))
    f = FunctionSummary(name="f\x1b[31m", file="m.py", line=1, frame_ids=(CompileId("0", 0).frame_id,), compiles=1,
                        recompile_events=(), guard_entries=(entry,))
    return Run(functions=(f,), parse=ParseStats(), source="parse")


def test_hostile_names_in_the_guard_section_are_escaped():
    run = _heavy("L['x\x1b]8;;http://e\x07`\r\n::error::']")
    for fmt in ("table", "markdown"):
        text = render(run_report(run), fmt)
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text, fmt
        assert "\n::error::" not in text, fmt
        assert "450" in text


def test_a_function_with_few_guards_is_counted_not_described():
    few = replace(_heavy("L['x']").functions[0], guard_entries=(EntryGuards(CompileId("0", 0), 20, 30.0),))
    text = render(run_report(Run(functions=(few, _heavy("L['y']").functions[0]), parse=ParseStats(), source="parse")), "table")
    assert "1 other compiled function with fewer than 100 guards each" in text
    assert text.count("cache entry of") == 1


def test_microseconds_from_a_millisecond_up_are_milliseconds():
    assert (micros(3.25), micros(206.4), micros(1479.0)) == ("3.2 us", "206 us", "1.48 ms")


def test_a_traces_latency_line_ends_its_guard_tree_and_is_no_guard():
    """A trace's guard tree ends with ``Guard latency = X us`` (torch >= 2.7): it was read as a flat guard before."""
    from guarddiag.logparse.trace import TraceParser

    (trace,) = (BLOCKS / "trace").glob("*.log")
    listings = [e for e in TraceParser(None, True).parse(trace.read_text().splitlines(keepends=True)) if isinstance(e, GuardListing)]
    assert [e.latency_us for e in listings] == _latencies_in_log()
    assert not any("latency" in g.expr.lower() for e in listings for g in e.guards)
