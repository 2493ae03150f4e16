"""The run report's two human formats, render/table.py and render/markdown.py, on recorded logs."""

from __future__ import annotations

from dataclasses import replace

from guarddiag.ids import FrameId, Process
from guarddiag.model import ParseStats, Run
from guarddiag.pipeline import parse_logs
from guarddiag.render import markdown, table
from guarddiag.render.words import function_label, short_path
from guarddiag.report import run_report
from tests.conftest import FIXTURES, LOGS
from tests.documents import assert_document

LIMIT = LOGS / "torch-2.13.0" / "recompile_limit.log"
GRAPH_BREAK = LOGS / "torch-2.13.0" / "graph_break.log"
PASTE = FIXTURES / "pasted" / "005-pytorch-110928.txt"


def _failed_with_lost_lines() -> Run:
    """A run whose script failed after torch compiled 20 times, of which its log shows 8."""
    return replace(parse_logs([str(LIMIT)]), source="run", status="failed", exit_code=1, torch_compiles=20)


def test_table_puts_totals_then_what_went_wrong_then_the_functions():
    lines = table.render(run_report(_failed_with_lost_lines())).splitlines()
    assert lines[0] == "1 compiled functions, 8 compiles, 7 recompiles, 1 recompile-limit hits, 0 graph breaks (torch version unknown)"
    assert lines[1] == "the script failed (exit status 1); counts cover what ran before that"
    assert lines[2].startswith("warning: torch compiled 20 times in the script's process but its log shows 8: log lines were lost")
    header = lines.index("function                                     compiles    recompiles  limit hit    graph breaks")
    assert lines[header + 2] == "rollout (scenarios/recompile_limit.py:24)           8             7  yes"
    details = lines.index("rollout (scenarios/recompile_limit.py:24): 7 recompiles")
    assert lines[details + 1 : details + 5] == [
        "  7x value: value of local `horizon`",
        "      e.g. horizon == 1",
        "      at scenarios/recompile_limit.py:27 in rollout: for _ in range(horizon):",
        "  hit recompile_limit (8) at 0/8 on value of local `horizon`: torch runs it without compiling from here on",
    ]
    assert lines[-1] == f"torch log: {LIMIT}"


def test_table_orders_functions_by_recompiles_and_blanks_zero_graph_breaks():
    text = table.render(run_report(parse_logs([str(GRAPH_BREAK)])))
    rows = [line for line in text.splitlines() if line.startswith(("forward (", "forward, after"))]
    # The resume function after the print's graph break is named by the user's function and line.
    assert [r.split("  ")[0] for r in rows[:2]] == [
        "forward (scenarios/graph_break.py:28)",
        "forward, after the graph break at line 31 (scenarios/graph_break.py)",
    ]
    assert rows[0].endswith(" 2") and rows[1].endswith(" 1")  # 2 graph breaks; none shows as a blank, not 0
    assert text.count("1x global_state: grad mode") == 2


def test_table_of_a_paste_leaves_compiles_blank_and_says_what_it_covers():
    lines = table.render(run_report(parse_logs([str(PASTE)]))).splitlines()
    assert lines[0].startswith("read as a paste: 2 messages recognised (2 recompiles,")
    (row,) = [line for line in lines if line.startswith("fn (dynamo/test_misc.py:1354) ")]
    assert row.split() == ["fn", "(dynamo/test_misc.py:1354)", "2"]


def test_table_of_a_run_where_nothing_compiled_says_so():
    run = Run(functions=(), parse=ParseStats(lines=3), source="run")
    assert table.render(run_report(run)) == (
        "0 compiled functions, 0 compiles, 0 recompiles, 0 recompile-limit hits, 0 graph breaks (torch version unknown)\n\n"
        "note: torch logged nothing: nothing was compiled"
    )


def test_markdown_is_one_document_with_a_section_per_function_that_recompiled():
    text = markdown.render(run_report(_failed_with_lost_lines()))
    assert_document(text, "markdown")
    lines = text.splitlines()
    assert lines[:3] == ["## guarddiag", "", lines[2]] and lines[2].startswith("1 compiled functions, 8 compiles")
    assert "**the script failed (exit status 1)**; counts cover what ran before that" in lines
    assert any(line.startswith("> **warning**: torch compiled 20 times") for line in lines)
    assert "| `rollout (scenarios/recompile_limit.py:24)` |          8 |            7 | yes         |              0 |" in lines
    section = lines.index("### `rollout (scenarios/recompile_limit.py:24)`")
    assert lines[section + 2 : section + 4] == [
        "- 7x **value**: value of local `horizon`",
        "- hit recompile_limit (8) at 0/8 on value of local `horizon`: torch runs it without compiling from here on",
    ]
    assert text.endswith("\n") and "torch log:" not in text


def test_markdown_of_a_paste_and_of_a_log_without_torch_lines():
    paste = markdown.render(run_report(parse_logs([str(PASTE)])))
    assert "| `fn (dynamo/test_misc.py:1354)` |            |            2 |" in paste
    empty = markdown.render(run_report(Run(functions=(), parse=ParseStats(lines=3), source="parse")))
    assert_document(empty, "markdown")
    assert empty.rstrip().endswith("> no torch log lines found: was the log captured with TORCH_LOGS=guards,recompiles,dynamo?")


def test_function_labels():
    (f,) = parse_logs([str(LIMIT)]).functions
    assert function_label(f) == "rollout (scenarios/recompile_limit.py:24)"
    assert function_label(replace(f, frame_ids=(FrameId("0", Process.of_rank(1)),))) == "rollout (scenarios/recompile_limit.py:24) [rank1]"
    assert function_label(replace(f, line=None)) == "rollout (scenarios/recompile_limit.py)"
    assert function_label(replace(f, file="")) == "rollout (?)"
    assert function_label(replace(f, name="", frame_ids=(FrameId("0"), FrameId("1")))) == "<unidentified frame 0, 1>"
    assert short_path("C:\\work\\proj\\model.py") == "proj/model.py" and short_path("model.py") == "model.py"
