"""Distributed jobs through the installed command: ``guarddiag run -m torch.distributed.run`` with real
torchrun on the CPU (gloo, c10d rendezvous on localhost), ranks named by rank, each rank's counts
equal to torch's own count read in that worker (tests/fixtures/distributed/ranks.py), Ctrl-C and
--timeout stopping every rank; and ``-m`` itself: ``-m pytest``, a local module, its errors.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, guarddiag_cmd, run_guarddiag
from tests.flag_catalog import cache_flag_catalog

RANKS_JOB = FIXTURES / "distributed" / "ranks.py"
# 4 ranks on 2 cores: one thread each, or the ranks fight over the cores.
ENV = {"OMP_NUM_THREADS": "1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _torchrun(nproc: int, out: Path, *job_args: str) -> list[str]:
    return [
        "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"localhost:{_free_port()}", str(RANKS_JOB), str(out), *job_args,
    ]


def _truth(out: Path, nproc: int) -> dict[str, int]:
    """Compiles per rank as torch counted them in each worker."""
    return {f"rank{r}": json.loads((out / f"rank{r}.json").read_text())["compiles"] for r in range(nproc)}


def _per_process(record: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in record["functions"]:
        process = f["frame_ids"][0].partition(":")[0] if ":" in f["frame_ids"][0] else ""
        counts[process] = counts.get(process, 0) + f["compiles"]
    return counts


def _record(workdir: Path) -> dict:
    (path,) = list((workdir / ".guarddiag" / "runs").glob("*/run.json"))
    return json.loads(path.read_text())


def _ranks(record: dict) -> list[dict]:
    """The processes of the job's record that had a rank (RANK from torchrun, or torch's [rankN]: prefix)."""
    return [p for p in record["job"]["processes"] if p["rank"] is not None]


def _processes_of(run_dir: Path) -> list[int]:
    """Processes still alive that belong to the run (its folder is in their environment)."""
    mark = f"GUARDDIAG_CHILD_LOG_DIR={run_dir}".encode()
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if mark in fh.read().split(b"\0"):
                        alive.append(int(entry))
            except OSError:
                continue
    return alive


def _assert_named_by_rank(record: dict, truth: dict[str, int], nproc: int) -> None:
    """One function per rank, named by the rank (no child1, no child1:rank0, nothing in the launcher), and
    each rank's place in the job as torchrun gave it."""
    assert _per_process(record) == truth
    assert record["module"] == "torch.distributed.run" and record["script"] is None
    assert record["argv"][:2] == ["--nproc-per-node", str(nproc)]
    ranks = {r["process"]: r for r in _ranks(record)}
    assert sorted(ranks) == sorted(truth)
    for name, info in ranks.items():
        assert info["rank"] == int(name[4:]) == info["local_rank"]
        assert (info["node_rank"], info["world_size"], info["host"]) == (0, nproc, socket.gethostname())


@pytest.mark.torch
@pytest.mark.slow
def test_every_rank_recompiles_alike_and_is_named_by_its_rank(tmp_path):
    # Two ranks show it; four ranks are named alike in the four-rank job of the divergence test below.
    proc = run_guarddiag("run", "--format", "json", "--out", str(tmp_path / "rec.json"), *_torchrun(2, tmp_path),
                         cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((tmp_path / "rec.json").read_text())
    truth = _truth(tmp_path, 2)
    assert truth == {f"rank{r}": 2 for r in range(2)}
    _assert_named_by_rank(record, truth, 2)
    # explain of the record: the launcher compiled nothing, so rank 0's log is explained.
    explained = run_guarddiag("explain", str(tmp_path / "rec.json"), cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert "forward (distributed/ranks.py:" in explained.stdout and "torch log of rank0" in explained.stdout


@pytest.mark.torch
@pytest.mark.slow
def test_one_rank_with_another_batch_shape_recompiles_alone(tmp_path):
    # RANK exported where guarddiag starts (some clusters do) hides no worker: torchrun gives each its own.
    proc = run_guarddiag("run", *_torchrun(2, tmp_path, "--odd-rank", "1", "--helper-rank", "1"), cwd=tmp_path,
                         env={**ENV, "RANK": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = _truth(tmp_path, 2)
    assert truth == {"rank0": 2, "rank1": 3}
    # The process rank 1 started inherited RANK=1 and is no rank: a child, its compile its own.
    helper = json.loads((tmp_path / "child.json").read_text())
    assert helper["rank_env"] == "1"
    record = _record(tmp_path)
    assert _per_process(record) == {**truth, "child1": helper["compiles"]} == {**truth, "child1": 1}
    assert [(r["process"], r["rank"], r["node_rank"]) for r in _ranks(record)] == [("rank0", 0, 0), ("rank1", 1, 0)]
    lines = proc.stdout.splitlines()
    # The table's row of each rank: compiles, recompiles.
    rows = {ln.split()[2]: ln.split()[-2:] for ln in lines if ln.startswith("forward (distributed/ranks.py:") and ln[-1].isdigit()}
    assert rows == {"[rank1]": ["3", "2"], "[rank0]": ["2", "1"]}
    assert "[child1]" in proc.stdout and "rank1:" not in proc.stdout


@pytest.mark.torch
def test_one_of_four_ranks_takes_another_branch_and_the_divergence_names_it_and_its_cause(tmp_path):
    proc = run_guarddiag("run", "--out", str(tmp_path / "rec.json"), *_torchrun(4, tmp_path, "--branch-rank", "2"), cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = _truth(tmp_path, 4)
    assert truth == {"rank0": 2, "rank1": 2, "rank2": 3, "rank3": 2}
    record = json.loads((tmp_path / "rec.json").read_text())
    _assert_named_by_rank(record, truth, 4)
    (job,) = record["rank_divergence"]
    (forward,) = job["functions"]
    assert [(g["ranks"], g["recompiles"]) for g in forward["groups"]] == [([0, 1, 3], 1), ([2], 2)]
    assert forward["groups"][1]["causes"][-1] == "value of `self.doubled` on argument `self`"
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("  forward (distributed/ranks.py:"))
    assert "rank 2: 3 compiles, 2 recompiles" in line and "ranks 0, 1, 3: 2 compiles, 1 recompile" in line, line


@pytest.mark.torch
@pytest.mark.slow
def test_a_rank_that_recompiles_as_often_as_the_others_into_another_graph_diverges(tmp_path):
    """Rank 1's recompile on the new batch size also takes the other branch: same counts, same decisive
    cause as rank 0, but another graph; what else changed against the entry it missed tells them apart."""
    proc = run_guarddiag("run", "--out", str(tmp_path / "rec.json"), *_torchrun(2, tmp_path, "--branch-with-shape", "1"), cwd=tmp_path,
                         env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _truth(tmp_path, 2) == {"rank0": 2, "rank1": 2}
    (job,) = json.loads((tmp_path / "rec.json").read_text())["rank_divergence"]
    (forward,) = job["functions"]
    assert [(g["ranks"], g["recompiles"], g["causes"]) for g in forward["groups"]] == [
        ([0], 1, ["size of tensor argument `x` at dim 0"]),
        ([1], 1, ["size of tensor argument `x` at dim 0", "also value of `self.doubled` on argument `self`"]),
    ]
    assert "compiled every function alike" not in proc.stdout


@pytest.mark.torch
@pytest.mark.slow
def test_a_rank_whose_log_lost_its_lines_is_said_and_not_taken_for_a_rank_that_compiled_nothing(tmp_path):
    """Rank 1 turns logging off before it compiles: torch's own count in that worker (its ledger) says
    it compiled, its log shows nothing. The report says rank 1's log lost lines and does not compare
    rank 1 (the gate refuses a run with a process that lost lines: tests/unit/runlogs/test_runlogs.py)."""
    proc = run_guarddiag("run", "--out", str(tmp_path / "rec.json"), *_torchrun(2, tmp_path, "--mute-rank", "1"), cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _truth(tmp_path, 2) == {"rank0": 2, "rank1": 2}
    record = json.loads((tmp_path / "rec.json").read_text())
    assert [(r["process"], r["torch_compiles"]) for r in _ranks(record)] == [("rank0", 2), ("rank1", 2)]
    assert _per_process(record) == {"rank0": 2}
    assert "torch compiled 2 times in process rank1 but its log shows 0: log lines were lost" in proc.stdout
    assert "never compiled" not in proc.stdout and "not compared: rank 1" in proc.stdout
    (job,) = record["rank_divergence"]
    assert (job["ranks"], job["uncounted_ranks"]) == ([0], [1])


@pytest.mark.torch
@pytest.mark.slow
def test_two_nodes_each_under_its_own_guarddiag_are_merged_into_one_job_keyed_by_node_and_rank(tmp_path):
    """Two torchrun launches joined by one rendezvous on localhost, as two nodes of one job, each under
    its own guarddiag; rank 1 compiles nothing (it only waits at the barrier), rank 3 sees a third
    batch size. Each node's report compares its own ranks and names the ranks on the other node; the
    merge of the two records compares all four, the idle rank among them."""
    port = _free_port()
    nodes = []
    for node in ("a", "b"):
        (tmp_path / node).mkdir()
        args = ["run", "--out", str(tmp_path / node / "rec.json"), "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node",
                "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"localhost:{port}", "--rdzv-id", "job7", str(RANKS_JOB), str(tmp_path),
                "--idle-rank", "1", "--odd-rank", "3"]
        nodes.append(subprocess.Popen([*guarddiag_cmd(), *args], cwd=tmp_path / node, env={**os.environ, **ENV},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = {}
    for node, proc in zip(("a", "b"), nodes, strict=True):
        outs[node], err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
    truth = _truth(tmp_path, 4)
    assert truth == {"rank0": 2, "rank1": 0, "rank2": 2, "rank3": 3}
    seen = {}
    for node in ("a", "b"):
        record = json.loads((tmp_path / node / "rec.json").read_text())
        ranks = _ranks(record)
        # Each node reports its own two workers by their global rank, with the node's rank (GROUP_RANK) beside them.
        assert len(ranks) == 2 and len({r["node_rank"] for r in ranks}) == 1
        for r in ranks:
            assert (r["local_rank"], r["world_size"], r["run_id"]) == (r["rank"] - 2 * r["node_rank"], 4, "job7")
            assert r["torch_compiles"] == truth[r["process"]]
            seen[r["process"]] = r["node_rank"]
        assert _per_process(record) == {r["process"]: truth[r["process"]] for r in ranks if truth[r["process"]]}
        # The other node's ranks are named as not in this run, not taken for ranks that compiled alike.
        (job,) = record["rank_divergence"]
        mine = sorted(r["rank"] for r in ranks)
        missing = [r for r in range(4) if r not in mine]  # the other node's two ranks: one range
        assert (job["ranks"], job["missing_ranks"], job["world_size"]) == (mine, [[missing[0], missing[-1]]], 4)
        assert f"not in this run: ranks {', '.join(str(r) for r in missing)} of the job's 4 (WORLD_SIZE)" in outs[node]
    assert sorted(seen) == sorted(truth) and sorted(seen.values()) == [0, 0, 1, 1]
    # The idle rank's node: rank 1 compiled nothing and is compared as such.
    node_of_1 = "a" if any(r["rank"] == 1 for r in _ranks(json.loads((tmp_path / "a" / "rec.json").read_text()))) else "b"
    assert "rank 1 never compiled it" in outs[node_of_1]

    records = [f"{node}={tmp_path / node / 'rec.json'}" for node in ("a", "b")]
    merged = run_guarddiag("merge", *records, "--format", "json", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    data = json.loads(merged.stdout)
    processes = {p["process"]: p for p in data["job"]["processes"] if p["rank"] is not None}
    assert sorted(processes) == ["rank0", "rank1", "rank2", "rank3"]
    # Keyed by node and rank: each rank under the record of the node it ran on.
    assert {name: (p["node"], p["node_rank"]) for name, p in processes.items()} == {
        name: ("a" if seen[name] == _node_rank_of(tmp_path / "a") else "b", seen[name]) for name in processes
    }
    (job,) = data["rank_divergence"]
    assert (job["ranks"], job["silent_ranks"], job["missing_ranks"]) == ([0, 1, 2, 3], [1], [])
    (forward,) = job["functions"]
    assert [(g["ranks"], g["compiles"], g["recompiles"]) for g in forward["groups"]] == [([0, 2], 2, 1), ([3], 3, 2), ([1], 0, 0)]
    table = run_guarddiag("merge", *records, cwd=tmp_path)
    assert "rank 1 never compiled it" in table.stdout and "rank 3: 3 compiles, 2 recompiles" in table.stdout, table.stdout
    assert table.stdout.startswith("3 compiled functions in 3 processes (4 ranks, 1 showing no compile), 7 compiles, 4 recompiles")


def _node_rank_of(node_dir: Path) -> int:
    (rank, *_) = _ranks(json.loads((node_dir / "rec.json").read_text()))
    return rank["node_rank"]


@pytest.mark.torch
@pytest.mark.slow
def test_workers_started_without_torchrun_are_named_by_the_rank_torch_distributed_gave_them(tmp_path):
    proc = run_guarddiag("run", str(FIXTURES / "distributed" / "spawned.py"), "--", str(tmp_path), str(_free_port()),
                         cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = _record(tmp_path)
    # Compiles before init_process_group (no [rankN]: prefix) and after it are one process's; the main
    # process's [0/0] is its own, not rank 0's.
    main = json.loads((tmp_path / "main.json").read_text())["compiles"]
    assert _per_process(record) == {"": main, **_truth(tmp_path, 2)} == {"": 1, "rank0": 2, "rank1": 2}
    assert [f["compiles"] for f in record["functions"]] == [1, 2, 2]
    assert record["torch_compiles"] == main and "log lines were lost" not in proc.stdout + proc.stderr
    # Only the rank is known: no launcher told these processes their node.
    assert [(r["process"], r["rank"], r["node_rank"]) for r in _ranks(record)] == [("rank0", 0, None), ("rank1", 1, None)]


SINGLE_PROCESS_GROUP = """
import sys
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method=f"tcp://localhost:{sys.argv[1]}", rank=0, world_size=1)
f = torch.compile(lambda x, n: x * n, backend="eager")
for n in range(3):
    f(torch.ones(2), n)
dist.destroy_process_group()
"""


@pytest.mark.torch
@pytest.mark.slow
def test_a_script_that_is_its_own_process_group_is_the_main_process(tmp_path):
    """torch prefixes its lines with [rank0]: once the script's own process joins a group: still the
    script's process, whose count torch's record checks (was: [rank0], and a warning that log lines were lost)."""
    (tmp_path / "single.py").write_text(SINGLE_PROCESS_GROUP)
    proc = run_guarddiag("run", "single.py", "--", str(_free_port()), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = _record(tmp_path)
    assert _per_process(record) == {"": 2} and record["torch_compiles"] == 2
    assert "lost" not in proc.stdout and "[rank0]" not in proc.stdout


@pytest.mark.torch
@pytest.mark.slow
def test_a_rank_torchrun_restarts_is_a_new_process_whose_rank_the_record_keeps(tmp_path):
    """--max-restarts: each rank's process of the last restart is `rankN`; the one that failed before is
    a child, its rank and restart count among the job's processes; each process counts its own compiles."""
    args = _torchrun(2, tmp_path, "--fail-first-attempt")
    proc = run_guarddiag("run", *args[:2], "--max-restarts", "1", *args[2:], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = _record(tmp_path)
    first = {f"rank{r}": json.loads((tmp_path / f"rank{r}.attempt0.json").read_text()) for r in range(2)}
    again = _truth(tmp_path, 2)
    ranks = sorted((r["restart"], r["rank"], r["process"]) for r in _ranks(record))
    assert [(restart, rank) for restart, rank, _ in ranks] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert sorted(p for _, _, p in ranks[:2]) == ["child1", "child2"] and [p for _, _, p in ranks[2:]] == ["rank0", "rank1"]
    failed = {r["process"]: f"rank{r['rank']}" for r in _ranks(record) if r["restart"] == 0}
    assert _per_process(record) == {**again, **{c: first[r]["compiles"] for c, r in failed.items()}}
    assert (again, {r: v["compiles"] for r, v in first.items()}) == ({"rank0": 2, "rank1": 2}, {"rank0": 1, "rank1": 1})


def _start_sleeping_job(tmp_path: Path, *options: str, group: bool = False) -> subprocess.Popen:
    proc = subprocess.Popen(
        [*guarddiag_cmd(), "run", *options, *_torchrun(2, tmp_path, "--sleep", "300")],
        cwd=tmp_path, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=group,
    )
    end = time.monotonic() + 120
    while not all((tmp_path / f"rank{r}.json").exists() for r in range(2)):
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()[1][-3000:]
        time.sleep(0.2)
    return proc


def _assert_stopped_with_partial_record(tmp_path: Path, proc: subprocess.Popen, status: str, code: int) -> None:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-3000:]
    ours = [ln for ln in err.splitlines() if ln.startswith("guarddiag:")]
    assert len(ours) == 1 and "-m torch.distributed.run" in ours[0], err[-3000:]
    record = _record(tmp_path)
    assert record["status"] == status
    assert _per_process(record) == _truth(tmp_path, 2)  # the report covers what ran
    # Both ranks in the report: each on its own row, or one row when they compiled alike.
    assert ("[rank0]" in out and "[rank1]" in out) or "[ranks 0, 1]" in out, out
    # Every rank and the launcher stopped: nothing of the run is left.
    run_dir = Path(record["log_path"]).parent
    assert _processes_of(run_dir) == []
    for r in range(2):
        pid = json.loads((tmp_path / f"rank{r}.json").read_text())["pid"]
        assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"


@pytest.mark.torch
@pytest.mark.parametrize("group", [False, True], ids=["guarddiag-only", "process-group"])
@pytest.mark.slow
def test_ctrl_c_stops_every_rank_and_keeps_the_partial_record(tmp_path, group):
    proc = _start_sleeping_job(tmp_path, group=group)
    if group:
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: guarddiag, the launcher and the ranks at once
    else:
        proc.send_signal(signal.SIGINT)  # only guarddiag (a CI runner's cancel): it must stop the launcher and the ranks
    _assert_stopped_with_partial_record(tmp_path, proc, "interrupted", 130)


@pytest.mark.torch
@pytest.mark.slow
def test_timeout_stops_every_rank_and_keeps_the_partial_record(tmp_path):
    started = time.monotonic()
    proc = _start_sleeping_job(tmp_path, "--timeout", "30")  # the ranks compile in 8 s on 2 cores: room for a loaded machine
    _assert_stopped_with_partial_record(tmp_path, proc, "timeout", 3)
    assert time.monotonic() - started < 90


@pytest.mark.torch
@pytest.mark.slow
def test_run_m_pytest_counts_the_tests_compiles(tmp_path):
    out = tmp_path / "truth.json"
    proc = run_guarddiag("run", "--out", str(tmp_path / "rec.json"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         str(FIXTURES / "distributed" / "pytest_compiles.py"), cwd=tmp_path, env={"GUARDDIAG_TEST_OUT": str(out)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = json.loads(out.read_text())
    assert truth["argv0"].endswith(os.path.join("pytest", "__main__.py")) and truth["cwd_on_path"]
    record = json.loads((tmp_path / "rec.json").read_text())
    assert [(f["name"], f["compiles"]) for f in record["functions"]] == [("scale", truth["compiles"])] == [("scale", 3)]
    assert record["module"] == "pytest" and record["argv"][-1].endswith("pytest_compiles.py")
    assert "1 passed" in proc.stdout


LOCAL_MODULE = """
import json, sys
import torch

torch._dynamo.config.automatic_dynamic_shapes = False

@torch.compile(backend="eager")
def f(x, n):
    return x * n

for n in range(int(sys.argv[1])):
    f(torch.ones(2), n)
json.dump({"argv": sys.argv, "path0": sys.path[0]}, open("seen.json", "w"))
"""


@pytest.mark.torch
@pytest.mark.slow
def test_a_local_module_runs_as_python_m_runs_it_and_check_keeps_it_in_the_baseline(tmp_path):
    (tmp_path / "tinymod.py").write_text(LOCAL_MODULE)
    (tmp_path / "pyproject.toml").write_text("[tool.guarddiag]\nscripts = [{module = 'tinymod', args = ['3']}]\n")
    proc = run_guarddiag("baseline", "-o", "base.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads((tmp_path / "seen.json").read_text())
    # As `python -m tinymod 3`: argv[0] the module's file, the current folder first on sys.path.
    assert seen == {"argv": [str(tmp_path / "tinymod.py"), "3"], "path0": str(tmp_path)}
    assert "- path: -m tinymod 3\n" in (tmp_path / "base.yaml").read_text()
    # The same module and arguments from the command line are the configured entry; more values regress.
    assert run_guarddiag("check", "-b", "base.yaml", "-m", "tinymod", "3", cwd=tmp_path).returncode == 0
    (tmp_path / "tinymod.py").write_text(LOCAL_MODULE.replace("int(sys.argv[1])", "int(sys.argv[1]) + 2"))
    regressed = run_guarddiag("check", "-b", "base.yaml", cwd=tmp_path)
    assert regressed.returncode == 5, regressed.stdout + regressed.stderr
    assert "-m tinymod 3" in regressed.stdout


@pytest.mark.torch
@pytest.mark.slow
def test_compare_and_explain_run_a_module(tmp_path):
    (tmp_path / "tinymod.py").write_text(LOCAL_MODULE)
    cache_flag_catalog(tmp_path)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    compared = run_guarddiag("compare", "--flag", "recompile_limit=2", "-f", "json", "-m", "tinymod", "3", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr[-3000:]
    # 3 values of n: 2 recompiles; with a limit of 2 variants, the third value runs eagerly.
    assert [(r["label"], r["recompiles"]) for r in json.loads(compared.stdout)["runs"]] == [("baseline", [2]), ("recompile_limit=2", [1])]
    explained = run_guarddiag("explain", "-m", "tinymod", "3", cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert "tinymod.py:7): 3 cache entries, 2 recompiles" in explained.stdout


@pytest.mark.torch
@pytest.mark.parametrize(
    ("module", "says"),
    [
        ("no_such_module_here", "-m no_such_module_here: no such module"),
        ("json", "-m json: is a package without a __main__ module"),
        ("no_such_package.sub", "-m no_such_package.sub: cannot be found"),
    ],
)
def test_a_module_python_m_cannot_run_is_one_line_and_exit_2(tmp_path, module, says):
    proc = run_guarddiag("run", "-m", module, "--x", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"guarddiag: {says}") and "nothing was run" in proc.stderr
    assert not list((tmp_path / ".guarddiag" / "runs").glob("*"))


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "train.py", "-m", "pytest"], "train.py and -m pytest: give a script or -m MODULE, not both"),
        (["compare", "train.py", "--flag", "x", "-m", "pytest"], "train.py and -m pytest: give a script or -m MODULE"),
        (["check", "a.py", "-m", "pytest"], "a.py and -m pytest: give a script or -m MODULE"),
        (["run", "-m", "tinymod.py"], "-m tinymod.py: not a module name; give a script without -m"),
        (["explain", "-m", "pkg/tool"], "-m pkg/tool: not a module name"),
        (["run"], "nothing to run: give a script"),
    ],
)
def test_run_m_usage_errors_are_one_line_and_exit_2(tmp_path, argv, says):
    (tmp_path / "train.py").write_text("")
    (tmp_path / "tinymod.py").write_text("")
    proc = run_guarddiag(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"guarddiag: {says}") and proc.stderr.count("\n") == 1, proc.stderr
