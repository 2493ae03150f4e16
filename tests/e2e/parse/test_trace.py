"""``guarddiag parse`` and ``explain`` of a TORCH_TRACE (issue #27): the trace torch wrote during a
``guarddiag run`` reads as the same run, field by field: the trace's records give what the run's text log
and its ledger gave. The scenario hits the recompile limit, so the refused call (which has no
``dynamo_start`` in the trace, only torch's metrics) is covered too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS, run_guarddiag
from tests.shared_runs import shared

pytestmark = pytest.mark.torch

# What a trace cannot hold, by design: where the log was and how the report was made.

def _run_with_trace(folder: Path) -> dict:
    shutil.copy(SCENARIOS / "recompile_limit.py", folder / "model.py")
    proc = run_guarddiag("run", "model.py", "--out", "run.json", cwd=folder, env={"TORCH_TRACE": str(folder / "trace")})
    assert proc.returncode == 0, proc.stderr
    return {}


@pytest.fixture
def traced():
    """A folder with a run record (run.json) and the TORCH_TRACE torch wrote in that run (trace/), once per session."""
    return shared("run-with-torch-trace", _run_with_trace)[0]


def test_a_trace_reads_as_the_run_it_was_written_in(traced, tmp_path):
    # From the run's folder, as the run read its script's source (whose arguments are roles of causes).
    proc = run_guarddiag("parse", "trace", "--out", str(tmp_path / "trace.json"), "--strict", cwd=traced)
    assert proc.returncode == 0, proc.stderr
    run, trace = (json.loads(p.read_text()) for p in (traced / "run.json", tmp_path / "trace.json"))
    assert [f["name"] for f in trace["functions"]] == ["rollout"]
    assert trace["functions"] == run["functions"]  # counts, causes, the limit hit, compile times, callers
    assert trace["torch_compiles"] == run["torch_compiles"] == 8
    assert trace["torch_version"] == run["torch_version"]
    assert "1 recompile-limit hits" in proc.stdout and "8 compiles, 7 recompiles" in proc.stdout, proc.stdout


def test_a_trace_file_reads_as_its_folder(traced):
    (file,) = (traced / "trace").iterdir()
    by_file = run_guarddiag("parse", str(file), "-f", "json")
    by_folder = run_guarddiag("parse", str(traced / "trace"), "-f", "json")
    assert by_file.returncode == by_folder.returncode == 0, by_file.stderr + by_folder.stderr
    assert json.loads(by_file.stdout)["functions"] == json.loads(by_folder.stdout)["functions"]


def test_explain_of_a_trace_is_explain_of_the_text_log_of_the_same_run(traced):
    (log,) = traced.glob(".guarddiag/runs/*/torch.log")
    of_trace = run_guarddiag("explain", "trace", cwd=traced)
    of_log = run_guarddiag("explain", str(log), cwd=traced)
    assert of_trace.returncode == of_log.returncode == 0, of_trace.stderr + of_log.stderr
    assert "horizon" in of_trace.stdout
    # Only the headline differs: a trace names its torch version, the text log does not.
    assert of_trace.stdout.split("\n", 1)[1] == of_log.stdout.split("\n", 1)[1]
    assert "(torch 2." in of_trace.stdout.split("\n", 1)[0]


def test_a_trace_given_with_a_log_is_refused_in_one_line(traced, tmp_path):
    (tmp_path / "other.log").write_text("I1203 17:50:08.235000 22436 torch/_dynamo/x.py:1] [0/0] hello\n")
    proc = run_guarddiag("parse", str(traced / "trace"), str(tmp_path / "other.log"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "not a TORCH_TRACE file" in line and "parse a trace and a torch log apart" in line


def test_the_record_of_a_trace_reads_back_and_explains_from_its_trace(traced, tmp_path):
    assert run_guarddiag("parse", "trace", "--out", str(tmp_path / "rec.json"), cwd=traced).returncode == 0
    check = run_guarddiag("check", str(tmp_path / "rec.json"), "--max-recompiles", "7", cwd=traced)
    assert check.returncode == 0, check.stdout + check.stderr
    of_record = run_guarddiag("explain", str(tmp_path / "rec.json"), cwd=traced)
    of_trace = run_guarddiag("explain", "trace", cwd=traced)
    assert of_record.returncode == 0, of_record.stderr
    assert of_record.stdout.split("\nnote:")[0] == of_trace.stdout.split("\nnote:")[0]
