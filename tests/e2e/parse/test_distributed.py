"""`guarddiag parse` of a whole torchrun job and `guarddiag merge` of its nodes' records, through the
installed command, on jobs recorded from real torchrun runs (tests/fixtures/distributed/record_torchrun.py)
and on one recorded now; every per-rank count equals torch's own, read in each worker."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.conftest import LOGS, ROOT, run_guarddiag

TORCHRUN = LOGS / "torch-2.13.0" / "torchrun"
JOB = ROOT / "tests" / "fixtures" / "distributed" / "ranks_job.py"


def _truth_of(data: dict) -> dict[str, Counter]:
    return {f"rank{r}": Counter({f["co_name"]: f["compiles"] for f in t["functions"]}) for r, t in data["ranks"].items()}


def truth(name: str) -> dict[str, Counter]:
    return _truth_of(json.loads((TORCHRUN / f"{name}.truth.json").read_text()))


def per_process(record: dict) -> dict[str, Counter]:
    """Compiles per process and function from a JSON record (the process is the frame ids' prefix)."""
    out: dict[str, Counter] = {}
    for f in record["functions"]:
        process = f["frame_ids"][0].rpartition(":")[0]
        out.setdefault(process, Counter())[f["name"]] += f["compiles"]
    return out


def _json(*args: str, cwd: Path = ROOT) -> dict:
    proc = run_guarddiag(*args, "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("guarddiag: "), proc.stderr
    return lines[0]


def test_parse_a_log_dir():
    record = _json("parse", str(TORCHRUN / "logdir"))
    assert per_process(record) == truth("logdir")
    assert record["job"]["read_as"] == "log_dir"
    assert [(p["process"], p["local_rank"]) for p in record["job"]["processes"]] == [("rank0", 0), ("rank1", 1)]


def test_parse_per_rank_files():
    files = sorted(str(p) for p in TORCHRUN.glob("logdir/*/attempt_0/*/stderr.log"))
    record = _json("parse", *files)
    assert per_process(record) == truth("logdir")
    table = run_guarddiag("parse", *files).stdout
    assert "read 2 per-rank logs" in table and "forward (distributed/ranks_job.py:30) [rank1]" in table


def test_parse_an_interleaved_capture():
    record = _json("parse", str(TORCHRUN / "console.log"))
    got = per_process(record)
    assert {rank: c["forward"] for rank, c in truth("console").items()} == {p: got[p]["forward"] for p in ("rank0", "rank1")}


def test_merge_the_records_of_two_nodes(tmp_path: Path):
    for node in ("node_a", "node_b"):
        assert run_guarddiag("parse", str(TORCHRUN / node), "--out", str(tmp_path / f"{node}.json")).returncode == 0
    merged = tmp_path / "merged.json"
    proc = run_guarddiag("merge", str(tmp_path / "node_a.json"), str(tmp_path / "node_b.json"), "--out", str(merged))
    assert proc.returncode == 0, proc.stderr
    assert "merged 2 records as the nodes of one job" in proc.stdout
    record = json.loads(merged.read_text())
    assert per_process(record) == truth("nodes")
    assert {p["process"]: p["node"] for p in record["job"]["processes"]} == {
        "rank0": "node_a", "rank1": "node_a", "rank2": "node_b", "rank3": "node_b"
    }
    lines = [json.loads((tmp_path / f"{n}.json").read_text())["parse"]["lines"] for n in ("node_a", "node_b")]
    assert record["parse"]["lines"] == sum(lines)
    records = (str(tmp_path / "node_a.json"), str(tmp_path / "node_b.json"))
    assert yaml.safe_load(run_guarddiag("merge", *records, "-f", "yaml").stdout) == record
    markdown = run_guarddiag("merge", *records, "-f", "markdown").stdout
    assert "| `rank3` " in markdown  # a process label is a name from a record: a code span
    # The merged record is a record: diff reads it.
    assert run_guarddiag("diff", str(merged), str(merged)).returncode == 0


def test_merge_what_a_user_gets_wrong(tmp_path: Path):
    node = tmp_path / "node.json"
    assert run_guarddiag("parse", str(TORCHRUN / "node_a"), "--out", str(node)).returncode == 0
    clash = _one_error_line(run_guarddiag("merge", f"a={node}", f"b={node}"))
    assert "rank0 is also in" in clash and "--jobs" in clash
    jobs = _json("merge", "--jobs", f"py311={node}", f"py312={node}")
    assert sorted(per_process(jobs)) == ["py311/rank0", "py311/rank1", "py312/rank0", "py312/rank1"]
    assert "README.md: not valid JSON" in _one_error_line(run_guarddiag("merge", str(node), str(ROOT / "README.md")))
    # A run/1 record reads alone (its causes converted), but merge does not mix it with run/2's.
    older = tmp_path / "older.json"
    older.write_text(node.read_text().replace('"guarddiag.run/2"', '"guarddiag.run/1"'))
    assert "different schema versions" in _one_error_line(run_guarddiag("merge", str(node), str(older)))
    assert "label" in _one_error_line(run_guarddiag("merge", str(node), str(node)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.torch
@pytest.mark.slow
def test_parse_a_log_dir_torchrun_writes_now(tmp_path: Path):
    """A fresh real torchrun job (2 ranks, gloo, c10d on localhost) with the installed torch."""
    env = {
        **os.environ,
        "TORCH_LOGS": "dynamo,guards,recompiles,graph_breaks",
        "GUARDDIAG_TRUTH_DIR": str(tmp_path / "truth"),
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"localhost:{_free_port()}", "--log-dir", str(tmp_path / "logs"), "--redirects", "3", str(JOB),
    ]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = {p.name.split(".")[0].removeprefix("rank"): json.loads(p.read_text()) for p in (tmp_path / "truth").glob("*.json")}
    assert per_process(_json("parse", str(tmp_path / "logs"))) == _truth_of({"ranks": ranks})


def test_check_fails_on_rank_divergence_only_when_asked(tmp_path: Path):
    """A 4-rank job where rank 2 took another branch, through the installed command: `check` lists the
    divergence and passes; with --fail-on-rank-divergence it fails with exit 5."""
    record = tmp_path / "job.json"
    made = run_guarddiag("parse", str(LOGS / "torch-2.13.0" / "torchrun" / "branch4.log"), "--out", str(record), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    shown = run_guarddiag("check", str(record), "--max-recompiles", "5", cwd=tmp_path)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "rank_divergence: forward (distributed/diverge_worker.py:27): rank 2 recompiled it 1 time" in shown.stdout
    failed = run_guarddiag("check", str(record), "--max-recompiles", "5", "--fail-on-rank-divergence", cwd=tmp_path)
    assert failed.returncode == 5, failed.stdout + failed.stderr
    assert failed.stdout.rstrip().splitlines()[-1] == "FAILED: 1 rank divergence(s)"
