"""Process labels (guarddiag.ids.Process): parsed once, printed back as records and reports write them."""

from __future__ import annotations

import pytest

from guarddiag.ids import CHILD, LOCAL, LOG, MAIN, MAIN_PROCESS, RANK, CompileId, FrameId, Process


@pytest.mark.parametrize(
    ("text", "process"),
    [
        ("", MAIN_PROCESS),
        ("rank1", Process(RANK, 1)),
        ("local0", Process(LOCAL, 0)),
        ("log2", Process(LOG, 2)),
        ("child3", Process(CHILD, 3)),
        ("py311/rank0", Process(RANK, 0, "py311")),  # a job of a CI matrix, merged
        ("node_a/main", Process(MAIN, None, "node_a")),  # a node's own process, merged
        ("child1:rank1", Process(CHILD, 1, "", Process(RANK, 1))),  # a rank's line in a child's log
    ],
)
def test_a_label_reads_back_as_itself(text: str, process: Process):
    assert Process.parse(text) == process
    assert str(process) == text


@pytest.mark.parametrize("text", ["main", "rank", "rankx", "rank1:", "py311/", "a/b/rank1", "0", "?forward@C"])
def test_what_is_no_label_is_refused(text: str):
    with pytest.raises(ValueError, match="not a process label"):
        Process.parse(text)


def test_processes_order_by_label_then_number():
    """The order reports list one function's processes in: ``rank2`` before ``rank10``, the main process
    first, and labels compared as text before their numbers (as reports have always listed them)."""
    labels = ["rank10", "rank2", "", "L/rank1", "child1", "L/main", "rank0", "log1", "L/child1"]
    ordered = [str(p) for p in sorted(Process.parse(t) for t in labels)]
    assert ordered == ["", "L/child1", "L/main", "L/rank1", "child1", "log1", "rank0", "rank2", "rank10"]


def test_only_a_rank_names_a_rank_of_its_job():
    assert (Process.parse("rank3").rank, Process.parse("rank3").job_rank) == (3, ("", 3))
    assert Process.parse("nodeA/rank3").job_rank == ("nodeA", 3)
    for other in ("", "child2", "local1", "log1", "L/main", "child1:rank3"):
        assert Process.parse(other).rank is None and Process.parse(other).job_rank is None


def test_the_main_process_is_false_as_its_empty_label_was():
    assert not MAIN_PROCESS and not Process.parse("")
    assert Process.parse("rank0") and Process.parse("L/main")


def test_a_merge_puts_a_process_under_its_record_and_keeps_what_its_lines_named():
    assert str(Process.of_rank(1).in_record("py311")) == "py311/rank1"
    assert str(MAIN_PROCESS.in_record("L")) == "L/main"
    assert str(Process.parse("child1:rank1").in_record("L")) == "L/child1:rank1"
    assert str(Process.parse("L/rank1").in_record("M")) == "M/L/rank1"  # a merged record merged again


def test_a_process_containing_another_is_the_one_whose_log_it_is():
    nested = Process.of_child(1).containing(Process.of_rank(1))
    assert str(nested) == "child1:rank1" and nested.outer == Process.of_child(1)
    assert Process.of_child(1).containing(MAIN_PROCESS) == Process.of_child(1)


def test_an_id_names_two_processes_at_most_and_reads_back_whatever_a_record_holds():
    """A process's own label and the rank its log's line named; more (a hand-edited record) stay in the
    frame, read back as written, however many there are."""
    fid = FrameId.parse("child1:rank0:log3:0")
    assert (fid.frame, str(fid.process)) == ("log3:0", "child1:rank0")
    text = "rank1:" * 5000 + "0/1"
    assert str(CompileId.parse(text)) == text
