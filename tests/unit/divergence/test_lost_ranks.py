"""Ranks whose logs lost lines (divergence.job_ranks, compile_gaps): a rank that shows less than torch
counted is said to have lost lines, never to have compiled nothing."""

from __future__ import annotations

import json

from guarddiag.divergence import job_ranks, rank_divergence
from guarddiag.ids import FrameId, Process
from guarddiag.model import FunctionSummary, Job, JobProcess, ParseStats, Run
from guarddiag.render import render
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict


def _compiled(process: str, name: str, line: int) -> FunctionSummary:
    return FunctionSummary(name, "/job/train.py", line, (FrameId(str(line), Process.parse(process)),), 1, ())


def _rank(rank: int, torch_compiles: int | None) -> JobProcess:
    log = f"/runs/x/torch.child-{rank}.log"
    return JobProcess(Process.of_rank(rank), rank, rank, "environment", (log,), world_size=2, torch_compiles=torch_compiles)


def _partly_lost() -> Run:
    """Both ranks compiled f and g (torch counted 2 in each); rank 1's log lost g's lines (the script
    turned logging off between them): its log shows f alone."""
    functions = (_compiled("rank0", "f", 7), _compiled("rank0", "g", 11), _compiled("rank1", "f", 7))
    return Run(functions, ParseStats(), source="run", job=Job("run", (_rank(0, 2), _rank(1, 2))), log_path="/runs/x/torch.log")


def test_a_rank_whose_log_lost_some_lines_is_not_said_to_have_never_compiled_what_it_does_not_show():
    """Seen on a real torchrun job (rank 1 calls logging.disable between two compiles): the report said
    'g: rank 1 never compiled it', which torch's own count in rank 1 (2, its log shows 1) contradicts."""
    run = _partly_lost()
    assert rank_divergence(run) == ()
    ranks = job_ranks(run)[""]
    assert (ranks.compared, ranks.uncounted, ranks.lost) == ((0,), (1,), (1,))
    text = render(run_report(run), "table")
    assert "never compiled" not in text and "compiled differently" not in text
    assert "not compared: rank 1 (its log shows fewer compiles than torch counted there" in text
    assert "torch's own count is not known" not in text  # it is known: 2
    (job,) = json.loads(render(run_report(run), "json"))["rank_divergence"]
    assert (job["ranks"], job["uncounted_ranks"], job["lost_ranks"]) == ([0], [1], [1])


def test_a_rank_whose_log_lost_every_line_is_said_to_have_lost_lines_not_to_have_no_count():
    """The --mute-rank case: torch counted 2 compiles in rank 1, its log shows none. The count is known;
    the words must not say it is not."""
    functions = (_compiled("rank0", "f", 7), _compiled("rank0", "g", 11))
    run = Run(functions, ParseStats(), source="run", job=Job("run", (_rank(0, 2), _rank(1, 2))))
    text = render(run_report(run), "table")
    assert "torch's own count is not known" not in text
    assert "not compared: rank 1 (its log shows fewer compiles than torch counted there" in text


def test_a_lost_rank_recompiling_elsewhere_is_named_as_lost_in_the_function_sentence():
    """Rank 0 recompiled f, rank 2 compiled f once, rank 1 lost lines: f diverges between 0 and 2, and
    the sentence says rank 1 is not known because its log lost lines."""
    f0 = FunctionSummary("f", "/job/train.py", 7, (FrameId("7", Process.of_rank(0)),), 3, ())
    functions = (f0, _compiled("rank2", "f", 7), _compiled("rank1", "f", 7))
    processes = (_rank(0, 3), _rank(1, 4), _rank(2, 1))
    run = Run(functions, ParseStats(), source="run", job=Job("run", processes))
    (d,) = rank_divergence(run)
    assert (d.uncounted, d.lost) == ((1,), (1,))
    text = render(run_report(run), "table")
    assert "rank 1: not known (its log shows fewer compiles than torch counted there" in text


def test_a_record_with_a_lost_rank_round_trips_and_renders_in_every_format():
    run = _partly_lost()
    again = run_from_dict(json.loads(json.dumps(record_dict(run_report(run)))))
    assert again.job == run.job
    for fmt in ("table", "json", "yaml", "markdown"):
        assert render(run_report(again), fmt)
















