"""A distributed job's logs read per process (guarddiag.logparse.jobdir, pipeline.parse_logs) and records
merged by node and rank (guarddiag.merge), on torchrun jobs recorded by
tests/fixtures/distributed/record_torchrun.py; every per-rank count is checked against torch's own,
read in each worker (the ``*.truth.json`` beside the logs)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.errors import InputError
from guarddiag.ids import MAIN_PROCESS, CompileId, FunctionKey, Process
from guarddiag.logparse.jobdir import layout
from guarddiag.merge import RankClash, merge_runs
from guarddiag.model import Run
from guarddiag.pipeline import parse_logs
from guarddiag.render import render
from guarddiag.render.formats import FORMATS
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import LOGS

TORCHRUN = LOGS / "torch-2.13.0" / "torchrun"
LOG_DIR = TORCHRUN / "logdir"
WORKERS = sorted(LOG_DIR.glob("*/attempt_0/*"))


def truth(name: str) -> dict[str, Counter]:
    """torch's compiles per rank label and function name, as each worker counted them."""
    data = json.loads((TORCHRUN / f"{name}.truth.json").read_text())
    return {f"rank{r}": Counter({f["co_name"]: f["compiles"] for f in t["functions"]}) for r, t in data["ranks"].items()}


def counted(run: Run) -> dict[str, Counter]:
    """guarddiag's compiles per process label and function name."""
    out: dict[str, Counter] = {}
    for f in run.functions:
        out.setdefault(str(f.process), Counter())[f.name] += f.compiles
    return out


def test_the_recorded_job_diverges_between_ranks():
    """The fixture is worth its keep: rank 1 compiled more than rank 0 (the batch of another size)."""
    ranks = truth("logdir")
    assert ranks["rank1"]["forward"] == ranks["rank0"]["forward"] + 1


@pytest.mark.parametrize("given", ["root", "run", "attempt", "workers"])
def test_a_log_dir_is_read_per_worker_from_any_level(given: str):
    run_dir = next(LOG_DIR.iterdir())
    paths = {
        "root": [LOG_DIR],
        "run": [run_dir],
        "attempt": [run_dir / "attempt_0"],
        "workers": [run_dir / "attempt_0" / "0"],
    }[given]
    plan = layout([str(p) for p in paths])
    assert plan.read_as == "log_dir"
    labels = [(str(p.process), p.rank, p.local_rank, p.named_by) for p in plan.processes]
    want = [("rank0", 0, 0, "prefix"), ("rank1", 1, 1, "prefix")]
    assert labels == (want[:1] if given == "workers" else want)
    assert all(Path(p.files[0]).name == "stderr.log" for p in plan.processes)


def test_the_log_dir_counts_per_rank_equal_torchs():
    run = parse_logs([str(LOG_DIR)])
    assert counted(run) == truth("logdir")
    assert run.job is not None and run.job.read_as == "log_dir"


def test_per_rank_files_are_reported_per_rank():
    files = [str(w / "stderr.log") for w in WORKERS]
    assert layout(files).read_as == "per_rank"
    assert counted(parse_logs(files)) == truth("logdir")


def test_files_of_one_rank_are_pieces_of_its_log():
    one = str(WORKERS[1] / "stderr.log")
    plan = layout([one, str(WORKERS[1] / "stdout.log")])
    assert plan.read_as == "pieces"
    assert [p.process for p in plan.processes] == [MAIN_PROCESS]


def test_an_interleaved_capture_counts_the_ranked_compiles_per_rank():
    """torchrun's terminal output, both workers writing to it: a log, not a paste."""
    run = parse_logs([str(TORCHRUN / "console.log")])
    assert run.parse.paste_messages is None
    got = counted(run)
    for rank, functions in truth("console").items():
        assert got[rank]["forward"] == functions["forward"], rank
    # warm_up compiled before init_process_group: no rank on its lines, and the report says so.
    assert "warm_up" in got[""]
    assert any("before init_process_group" in line for line in render(run_report(run), "table").splitlines())


def test_a_tee_capture_names_every_line_by_its_worker():
    """--tee's [default1]: prefix names the worker also before init_process_group: every count is per rank."""
    run = parse_logs([str(TORCHRUN / "tee.log")])
    assert counted(run) == truth("tee")
    assert "before init_process_group" not in render(run_report(run), "table")


def _unranked_worker(tmp_path: Path) -> Path:
    """A copy of the recorded log dir whose worker 1 logged nothing after init_process_group: its
    lines lose their [rank1]: prefix, as a worker that never called it writes them."""
    copy = tmp_path / "logs"
    shutil.copytree(LOG_DIR, copy)
    log = next(copy.glob("*/attempt_0/1/stderr.log"))
    log.write_text(log.read_text().replace("[rank1]:", ""))
    return copy


def test_a_worker_without_rank_is_named_by_its_local_rank_and_said_so(tmp_path: Path):
    run = parse_logs([str(_unranked_worker(tmp_path))])
    assert counted(run)["local1"] == truth("logdir")["rank1"]
    text = render(run_report(run), "table")
    assert "rank not known for" in text and "reported as [local1]" in text


def test_a_restarted_job_reads_its_newest_attempt_and_names_the_others(tmp_path: Path):
    copy = _unranked_worker(tmp_path)
    run_dir = next(copy.iterdir())
    shutil.copytree(LOG_DIR / run_dir.name / "attempt_0", run_dir / "attempt_1")
    run = parse_logs([str(copy)])
    assert counted(run) == truth("logdir")  # attempt_1 is the original, ranked one
    assert run.job is not None and [Path(s).name for s in run.job.skipped] == ["attempt_0"]


def test_what_is_not_one_torchrun_job_is_refused(tmp_path: Path):
    with pytest.raises(InputError, match="not a torchrun --log-dir"):
        layout([str(tmp_path)])
    for name in ("job1_a", "job1_b"):
        shutil.copytree(next(LOG_DIR.iterdir()), tmp_path / name)
    with pytest.raises(InputError, match="holds the logs of 2 torchrun jobs"):
        layout([str(tmp_path)])
    with pytest.raises(InputError, match="a directory among other inputs"):
        layout([str(LOG_DIR), str(WORKERS[0] / "stderr.log")])


@pytest.mark.parametrize("text", ["py311/rank0:1/2", "node_a/local1:0~1/0_1", "py311/main:0/3", "log2:0/1", "local0:1/0"])
def test_process_labels_read_back_as_themselves(text: str):
    cid = CompileId.parse(text)
    assert cid is not None and str(cid) == text
    assert Process.split(text)[0] == cid.process
    assert cid.process and Process.parse(str(cid.process)) == cid.process
    assert str(FunctionKey(cid.process, "f", "x.py", 3)) == f"{cid.process}:f@x.py:3"


def test_relabelling_moves_an_id_to_a_record():
    assert str(replace(CompileId.parse("rank1:0/3"), process=Process.of_rank(1).in_record("py311"))) == "py311/rank1:0/3"
    assert str(replace(CompileId.parse("0/3"), process=MAIN_PROCESS.in_record("py311"))) == "py311/main:0/3"
    assert Process.parse("py311/rank7").rank == 7 and Process.parse("local7").rank is None and MAIN_PROCESS.rank is None
    assert Process.split("?forward@C:\\x.py") == (MAIN_PROCESS, "?forward@C:\\x.py")  # a frame named from a Windows path is no process


def _nodes() -> list[tuple[str, str, Run]]:
    return [(name, f"{name}.json", parse_logs([str(TORCHRUN / name)])) for name in ("node_a", "node_b")]


def test_the_nodes_of_one_job_merge_by_global_rank():
    merged = merge_runs(_nodes(), jobs=False)
    assert counted(merged) == truth("nodes")
    assert merged.job is not None
    nodes = {str(p.process): p.node for p in merged.job.processes}
    assert nodes == {"rank0": "node_a", "rank1": "node_a", "rank2": "node_b", "rank3": "node_b"}
    assert merged.parse.lines == sum(r.parse.lines for _, _, r in _nodes())  # parse counters add up


def test_a_rank_in_two_records_of_one_job_is_refused_and_jobs_keep_them_apart():
    node = _nodes()[0][2]
    with pytest.raises(RankClash):
        merge_runs([("a", "a.json", node), ("b", "b.json", node)], jobs=False)
    merged = merge_runs([("py311", "a.json", node), ("py312", "b.json", node)], jobs=True)
    want = {f"{label}/{rank}": c for label in ("py311", "py312") for rank, c in truth("nodes").items() if rank in ("rank0", "rank1")}
    assert counted(merged) == want


def test_a_merge_says_which_record_did_not_finish_and_which_torch_each_ran():
    (a, pa, run_a), (b, pb, run_b) = _nodes()
    run_a, run_b = replace(run_a, status="timeout", torch_version="2.13.0"), replace(run_b, torch_version="2.4.1")
    merged = merge_runs([(a, pa, run_a), (b, pb, run_b)], jobs=False)
    text = render(run_report(merged), "table")
    assert "node_a (node_a.json): its run did not finish cleanly (status timeout)" in text
    assert "different torch versions: node_a: 2.13.0, node_b: 2.4.1" in text
    assert merged.status == "timeout" and merged.torch_version is None


def test_a_merged_record_round_trips_and_renders_in_every_format():
    merged = merge_runs(_nodes(), jobs=True)
    assert run_from_dict(json.loads(json.dumps(record_dict(run_report(merged))))) == merged
    for fmt in FORMATS:
        text = render(run_report(merged), fmt)
        assert "node_a/rank1" in text, fmt


def test_a_worker_folder_of_another_name_says_no_rank_is_known(tmp_path: Path):
    """A worker's files copied to a folder not named by its local rank: neither rank is guessed."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "stderr.log").write_text((WORKERS[0] / "stderr.log").read_text().replace("[rank0]:", ""))
    run = parse_logs([str(folder)])
    assert counted(run) == {"log1": truth("logdir")["rank0"]}
    assert "reported as [log1]" in render(run_report(run), "table")


def test_a_worker_whose_log_shows_no_compile_is_not_taken_for_a_rank_that_compiled_nothing(tmp_path: Path):
    """Rank 1's stderr.log emptied (a log lost, or captured without TORCH_LOGS): nothing in it names its
    rank, and a parsed log dir has no count of torch's own to tell it from a worker that compiled
    nothing: it is not compared, and the report does not say what it did."""
    copy = tmp_path / "logs"
    shutil.copytree(LOG_DIR, copy)
    next(copy.glob("*/attempt_0/1/stderr.log")).write_text("")
    run = parse_logs([str(copy)])
    assert run.job is not None and [str(p.process) for p in run.job.processes] == ["rank0", "local1"]
    assert json.loads(render(run_report(run), "json"))["rank_divergence"] == []
    text = render(run_report(run), "table")
    assert "never compiled" not in text and "alike" not in text and "reported as [local1]" in text


def _one_node(rank1_compiles: int | None) -> Run:
    """One node's record of a 4-rank job (WORLD_SIZE 4): the recorded log dir's ranks 0 and 1, rank 1's
    log showing no compile, and torch's own count of rank 1's compiles as given (``guarddiag run``
    reads it in each worker; None: not known, as in a record written before it was kept)."""
    run = parse_logs([str(LOG_DIR)])
    assert run.job is not None
    processes = tuple(
        replace(p, world_size=4, torch_compiles=rank1_compiles if p.process.rank == 1 else counted(run)[str(p.process)].total())
        for p in run.job.processes
    )
    return replace(run, functions=tuple(f for f in run.functions if f.process.rank != 1), job=replace(run.job, processes=processes))


def test_a_rank_known_to_have_compiled_nothing_is_compared_and_the_ranks_of_other_nodes_are_named():
    run = _one_node(0)
    (job,) = json.loads(render(run_report(run), "json"))["rank_divergence"]
    assert (job["ranks"], job["silent_ranks"], job["missing_ranks"], job["world_size"]) == ([0, 1], [1], [[2, 3]], 4)
    text = render(run_report(run), "table")
    assert "rank 1 never compiled it" in text
    assert "not in this run: ranks 2, 3 of the job's 4 (WORLD_SIZE)" in text


def test_a_rank_whose_log_shows_no_compile_and_whose_count_is_not_known_is_not_compared():
    run = _one_node(None)
    (job,) = json.loads(render(run_report(run), "json"))["rank_divergence"]
    assert (job["ranks"], job["silent_ranks"], job["uncounted_ranks"]) == ([0], [], [1])
    text = render(run_report(run), "table")
    assert "never compiled" not in text and "alike" not in text
    assert "rank divergence: not compared (rank 0 in this run)" in text
    assert "not compared: rank 1 (the log shows no compile there and torch's own count is not known" in text


def _log_dir_copy(tmp_path: Path) -> Path:
    """The recorded log dir copied, and its attempt folder (to add a worker to)."""
    shutil.copytree(LOG_DIR, tmp_path / "logdir")
    return next((tmp_path / "logdir").glob("*/attempt_0"))


@pytest.mark.parametrize("link", ["worker folder", "worker file"])
def test_a_symlink_in_a_log_dir_reads_each_real_file_once(tmp_path: Path, link: str):
    """A symlinked worker folder was read as one more worker: two rank0 rows, totals that did not add up."""
    attempt = _log_dir_copy(tmp_path)
    if link == "worker folder":
        (attempt / "2").symlink_to(attempt / "0", target_is_directory=True)
    else:
        (attempt / "2").mkdir()
        (attempt / "2" / "stderr.log").symlink_to(attempt / "0" / "stderr.log")
    run = parse_logs([str(tmp_path / "logdir")])
    assert [str(p.process) for p in run.job.processes] == ["rank0", "rank1"]
    assert counted(run) == truth("logdir")


def test_a_log_given_twice_under_two_names_is_read_once(tmp_path: Path):
    """A file and a symlink to it were two pieces of one log: every compile counted twice."""
    log = WORKERS[0] / "stderr.log"
    (tmp_path / "again.log").symlink_to(log)
    assert counted(parse_logs([str(log), str(tmp_path / "again.log")])) == counted(parse_logs([str(log)]))


def test_two_workers_of_a_log_dir_showing_one_rank_are_refused(tmp_path: Path):
    """A worker folder copied (not linked): two processes claim rank 0, as two merged nodes would."""
    attempt = _log_dir_copy(tmp_path)
    shutil.copytree(attempt / "0", attempt / "2")
    with pytest.raises(InputError, match=r"attempt_0/2: rank0 is also in .*attempt_0/0; the workers of one torchrun job have distinct"):
        parse_logs([str(tmp_path / "logdir")])


_BOUNDED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: a listed billion ranks took 24
from guarddiag.cli import main
sys.argv = ["guarddiag", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_a_world_size_of_a_billion_costs_what_the_ranks_present_do(tmp_path: Path, fmt: str):
    """Records of a real job's two nodes whose WORLD_SIZE says 10**9: merge listed every missing rank
    (24 GB, then a MemoryError); the ranks not in this run are ranges, the work bounded by the processes."""
    import subprocess
    import sys

    records = []
    for node in ("node_a", "node_b"):
        record = record_dict(run_report(parse_logs([str(TORCHRUN / node)])))
        for process in record["job"]["processes"]:  # set in the file: only the bounded child reads it
            process["world_size"] = 10**9
        path = tmp_path / f"{node}.json"
        path.write_text(json.dumps(record))
        records.append(str(path))
    proc = subprocess.run(
        [sys.executable, "-c", _BOUNDED, "merge", *records, "-f", fmt], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    if fmt == "json":
        (job,) = json.loads(proc.stdout)["rank_divergence"]
        assert (job["ranks"], job["missing_ranks"], job["world_size"]) == ([0, 1, 2, 3], [[4, 10**9 - 1]], 10**9)
    else:
        assert "ranks 4-999999999" in proc.stdout
