"""Graph breaks counted as torch counts them, with torch's reason, on run folders recorded with torch's own
count (tests/fixtures/graph_breaks/README.md) and on the recorded scenario logs of several torch versions."""

from __future__ import annotations

import json

import pytest

from guarddiag.ledger import read_ledger
from guarddiag.model import FunctionSummary, ParseStats, Run
from guarddiag.pipeline import LogReader, parse_log
from guarddiag.render import table
from guarddiag.render.summary import graph_break_lines
from guarddiag.report import run_report
from tests.conftest import FIXTURES, LOGS

BREAKS = FIXTURES / "graph_breaks"
# torch's reason for each kind's break: the break's type, and its explanation where torch gives one.
REASONS = {
    "item": "Unsupported Tensor.item() call with capture_scalar_outputs=False: Dynamo does not support tracing `Tensor.item()`",
    "print": "Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print`",
    "backward": "Unsupported Tensor.backward() call: Dynamo currently does not support tracing `Tensor.backward()`",
    "branch": "Data-dependent branching",
}


def _broken(kind: str) -> tuple[FunctionSummary, dict]:
    """The function of ``breaks.py KIND`` that broke its graph, read as `guarddiag run` reads its folder, and torch's truth."""
    folder = BREAKS / f"{kind}-2.13"
    with (folder / "torch.log").open() as fh:
        functions, _ = LogReader(ledger=read_ledger(folder / "torch.compiles.jsonl") or ()).read(fh).result()
    (broken,) = [f for f in functions if f.graph_breaks]
    return broken, json.loads((folder / "truth.json").read_text())


@pytest.mark.parametrize("kind", sorted(REASONS))
def test_one_graph_break_per_compile_that_breaks_as_torch_records_them(kind: str):
    broken, truth = _broken(kind)
    by_compile: dict[str, int] = {}
    for g in broken.graph_breaks:
        by_compile[str(g.compile_id)] = by_compile.get(str(g.compile_id), 0) + 1
    assert by_compile == truth["by_compile"]
    assert all(g.reason.startswith(REASONS[kind]) for g in broken.graph_breaks), [g.reason for g in broken.graph_breaks]


@pytest.mark.parametrize("kind", ["item", "print", "backward"])
def test_torchs_counter_agrees_where_it_counts(kind: str):
    # torch's counters["graph_break"] counts breaks raised as Unsupported; a data-dependent branch is filed
    # under "unimplemented" and missing from it, while torch records it as a graph break all the same.
    broken, truth = _broken(kind)
    assert len(broken.graph_breaks) == truth["counter"] == 2


def test_the_item_warning_is_not_a_break_of_its_own():
    # torch warns "Graph break from `Tensor.item()`, consider setting: ..." before it records the break.
    assert "Graph break from `Tensor.item()`" in (BREAKS / "item-2.13" / "torch.log").read_text()
    broken, _ = _broken("item")
    assert len(broken.graph_breaks) == 2 and all(g.location.endswith("breaks.py:39") for g in broken.graph_breaks)


def test_each_place_is_shown_with_its_compiles_and_torchs_reason():
    broken, _ = _broken("backward")
    (line,) = graph_break_lines(broken)
    assert line.startswith("graph break at graph_breaks/breaks.py:54 in 2 compiles: Unsupported Tensor.backward() call: ")
    text = table.render(run_report(Run(functions=(broken,), parse=ParseStats())))
    assert f"  {line}" in text


@pytest.mark.parametrize(
    ("version", "count", "reason"),
    [
        ("torch-2.15.0", 2, "Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print`"),
        ("torch-2.13.0", 2, "Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print`"),
        # torch 2.2-2.5 end the record with its exception; they log a break once per place (not per compile).
        ("torch-2.4.1", 1, "builtin: print [<class 'torch._dynamo.variables.constant.ConstantVariable'>"),
        ("torch-2.1.2", 1, "call_function BuiltinVariable(print) [ConstantVariable(str), TupleVariable()] {}"),
    ],
)
def test_torchs_reason_in_each_versions_log(version: str, count: int, reason: str):
    run = parse_log(str(LOGS / version / "graph_break.log"))
    (forward,) = [f for f in run.functions if f.graph_breaks]
    assert len(forward.graph_breaks) == count
    assert all(g.reason.startswith(reason) for g in forward.graph_breaks), [g.reason for g in forward.graph_breaks]
