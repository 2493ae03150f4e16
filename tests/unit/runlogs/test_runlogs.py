"""runlogs.py on recorded run folders (tests/fixtures/distributed/record_run_folders.py): each
process's log read apart and named, its compiles equal to torch's own count in that process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guarddiag.config import Settings
from guarddiag.errors import OK
from guarddiag.gate import evaluate
from guarddiag.ids import MAIN_PROCESS, FrameId
from guarddiag.model import Job, JobProcess, Run
from guarddiag.render import render
from guarddiag.render.gate import render_check
from guarddiag.report import run_report, run_reports
from guarddiag.runlogs import _named, process_logs, read_run_logs
from tests.conftest import FIXTURES

FOLDERS = FIXTURES / "distributed" / "run_folders"


def _read(name: str):
    folder = FOLDERS / name
    return read_run_logs(folder, folder / "torch.log", folder / "torch.compiles.jsonl")


def _per_process(functions) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in functions:
        counts[str(f.process)] = counts.get(str(f.process), 0) + f.compiles
    return counts


@pytest.mark.parametrize("name", ["torchrun_helper", "spawn"])
def test_each_process_counts_what_torch_counted_in_it(name):
    logs = _read(name)
    assert _per_process(logs.functions) == json.loads((FOLDERS / name / "truth.json").read_text())


def test_torchrun_workers_are_ranks_with_their_node_and_the_process_a_rank_started_is_a_child():
    logs = _read("torchrun_helper")
    assert [(str(r.process), r.rank, r.local_rank, r.node_rank, r.world_size, r.host) for r in logs.processes] == [
        ("rank0", 0, 0, 0, 2, "node-a"), ("rank1", 1, 1, 0, 2, "node-a"), ("child1", None, None, None, None, "")
    ]
    # Each process carries torch's own count of its compiles, which its log is checked against.
    counted = _per_process(logs.functions)
    assert [p.torch_compiles for p in logs.processes] == [counted.get(str(p.process), 0) for p in logs.processes]
    # No frame or compile id carries two processes (child1:rank0:0), nor the launcher's.
    ids = [str(i) for f in logs.functions for i in (*f.frame_ids, *(e.compile_id for e in f.recompile_events))]
    assert ids and all(i.count(":") == 1 for i in ids)
    assert logs.torch_compiles == 0  # the launcher compiled nothing


def test_spawned_workers_are_named_by_their_log_prefix_and_the_main_process_stays_apart():
    logs = _read("spawn")
    assert [(str(r.process), r.rank, r.node_rank, r.named_by) for r in logs.processes] == [
        ("rank0", 0, None, "prefix"), ("rank1", 1, None, "prefix")
    ]
    main = [f for f in logs.functions if not f.process]
    assert [f.frame_ids for f in main] == [(FrameId("0"),)] and logs.torch_compiles == 1
    assert sorted(str(f.frame_ids[0]) for f in logs.functions if f.process) == ["rank0:0", "rank1:0"]


def test_process_logs_name_each_log_as_the_report_does():
    assert [str(p.name) for p in process_logs(FOLDERS / "torchrun_helper")] == ["rank0", "rank1", "child1"]
    assert [str(p.name) for p in process_logs(FOLDERS / "spawn")] == ["rank0", "rank1"]


def _rank(rank: int, restart: int) -> JobProcess:
    return JobProcess(MAIN_PROCESS, rank, None, "environment", (), restart=restart)


def test_a_rank_restarted_is_named_by_its_last_restart_and_the_others_are_children():
    found = [
        (Path("a"), _rank(1, 0), None),
        (Path("b"), None, None),
        (Path("c"), _rank(0, 0), None),
        (Path("d"), _rank(1, 1), None),
        (Path("e"), _rank(0, 1), None),
    ]
    named = _named(found)
    names = [(p.path.name, str(p.name)) for p in named]
    assert names == [("a", "child1"), ("b", "child2"), ("c", "child3"), ("d", "rank1"), ("e", "rank0")]
    assert [str(p.rank.process) for p in named if p.rank] == ["child1", "child3", "rank1", "rank0"]


def test_a_rank_whose_log_shows_fewer_compiles_than_torch_counted_is_not_a_pass(tmp_path):
    """The recorded job with rank 1's compiles dropped from what its log shows (a log that lost lines):
    torch's own count in rank 1 (its ledger) is more than the log shows. The report names rank 1, and
    `check` does not compare the run with a baseline, as for the script's own process."""
    logs = _read("torchrun_helper")
    (rank1,) = [p for p in logs.processes if p.process.rank == 1]
    assert rank1.torch_compiles
    run = Run(
        functions=tuple(f for f in logs.functions if f.process.rank != 1),
        parse=logs.stats,
        source="run",
        torch_compiles=logs.torch_compiles,
        job=Job("run", logs.processes),
        log_path=str(FOLDERS / "torchrun_helper" / "torch.log"),
    )
    warning = f"torch compiled {rank1.torch_compiles} times in process rank1 but its log shows 0: log lines were lost"
    assert warning in render(run_report(run), "table")
    result = evaluate(run_reports({"job.py": run}), None, Settings(root=tmp_path))
    assert [f.kind for f in result.findings] == ["script_failed"] and result.exit_code != OK
    assert warning in render_check(result, "table")


def test_a_merge_checks_each_records_own_process_against_torchs_count():
    """Two records of the recorded spawn job, the first's script process with its compile dropped from
    what its log shows: the merge still knows torch counted one there, and says that log lost lines."""
    from dataclasses import replace

    from guarddiag.merge import merge_runs

    logs = _read("spawn")
    whole = Run(functions=logs.functions, parse=logs.stats, source="run", torch_compiles=logs.torch_compiles,
                job=Job("run", logs.processes))
    cut = replace(whole, functions=tuple(f for f in logs.functions if f.process))
    merged = merge_runs([("a", "a.json", cut), ("b", "b.json", whole)], jobs=True)
    assert merged.job is not None
    mains = {str(p.process): p.torch_compiles for p in merged.job.processes if p.process.kind == "main"}
    assert mains == {"a/main": 1, "b/main": 1}
    assert "torch compiled 1 times in process a/main but its log shows 0: log lines were lost" in render(run_report(merged), "table")
    assert "b/main but" not in render(run_report(merged), "table")
