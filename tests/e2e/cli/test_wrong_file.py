"""guarddiag's own files given to the wrong command are named, with the command that reads them
(issue #24, section 7: a check report given to diff was "upgrade guarddiag", a run record given to
parse "capture the log with TORCH_LOGS"). The files are made by the installed command on a real run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS, run_guarddiag
from tests.scenario_runs import scenario_run
from tests.shared_runs import shared

pytestmark = pytest.mark.torch


def _kinds(folder: Path) -> dict:
    """Each kind of file guarddiag writes, from the shared run of a scenario (tests/scenario_runs.py)."""
    made = scenario_run("module_int_attribute")
    assert made.returncode == 0, made.stderr
    shutil.copy(made.folder / "run.json", folder / "run.json")
    (folder / "report.json").write_text(made.stdout)  # the script's own output, then the report
    for args, out in [
        (("check", "run.json", "--max-recompiles", "9", "-f", "json"), "check.json"),
        (("check", "run.json", "--max-recompiles", "9", "-f", "yaml"), "check.yaml"),
        (("diff", "run.json", "run.json", "-f", "json"), "diff.json"),
    ]:
        proc = run_guarddiag(*args, cwd=folder)
        assert proc.returncode == 0, proc.stderr
        (folder / out).write_text(proc.stdout)
    for args in [("check", "run.json", "--max-recompiles", "9", "--junit", "junit.xml"), ("baseline", "run.json", "-o", "base.yaml"),
                 ("merge", "a=run.json", "b=run.json", "-o", "merged.json")]:
        proc = run_guarddiag(*args, cwd=folder)
        assert proc.returncode == 0, proc.stderr
    return {}


@pytest.fixture
def files():
    """A folder holding each kind of file guarddiag writes, from one real run of a scenario: made once per
    session (tests/shared_runs.py) and only read by the tests."""
    return shared("wrong-file-kinds", _kinds)[0]


_READS_RECORDS = "diff, explain, merge, check and baseline read run records written by guarddiag run --out"
_READS_LOGS = "parse and explain read torch logs"
_CHECK = "a guarddiag check report (guarddiag check -f json or yaml)"
_RECORD = "a guarddiag run record (guarddiag run --out, parse --out or merge -o)"
_JUNIT = "a guarddiag JUnit report (guarddiag check --junit)"


@pytest.mark.parametrize(
    ("command", "name", "says"),
    [
        (("diff", "{f}", "run.json"), "check.json", f"check.json: {_CHECK}, not a run record; {_READS_RECORDS}"),
        (("explain", "{f}"), "check.json", "check.json: a guarddiag check report (guarddiag check -f json or yaml), not a run record"),
        (("merge", "{f}", "run.json"), "check.json", "check.json: a guarddiag check report"),
        (("diff", "run.json", "{f}"), "diff.json", "diff.json: a guarddiag diff report (guarddiag diff -f json or yaml), not a run record"),
        (("diff", "{f}", "run.json"), "base.yaml", "base.yaml: a guarddiag baseline (guarddiag baseline), not a run record"),
        (("diff", "{f}", "run.json"), "junit.xml", "junit.xml: a guarddiag JUnit report (guarddiag check --junit), not a run record"),
        (("diff", "{f}", "run.json"), "report.json",
         "report.json: a guarddiag run report with the script's own output before it (guarddiag run -f json > FILE), not a run record"),
        (("parse", "{f}"), "run.json", f"run.json: {_RECORD}, not a torch log; {_READS_LOGS}"),
        (("parse", "{f}"), "merged.json", "merged.json: a guarddiag run record"),
        (("parse", "{f}"), "base.yaml", f"base.yaml: a guarddiag baseline (guarddiag baseline), not a torch log; {_READS_LOGS}"),
        (("parse", "{f}"), "check.yaml", "check.yaml: a guarddiag check report (guarddiag check -f json or yaml), not a torch log"),
        (("parse", "{f}"), "junit.xml", "junit.xml: a guarddiag JUnit report (guarddiag check --junit), not a torch log"),
        (("parse", "{f}"), "report.json", "report.json: a guarddiag run report with the script's own output before it"),
        (("explain", "{f}"), "base.yaml", "base.yaml: a guarddiag baseline (guarddiag baseline), not a torch log"),
        (("check", "{f}"), "base.yaml", "base.yaml: a guarddiag baseline (guarddiag baseline), not a Python script"),
        (("check", "run.json", "--baseline", "{f}"), "junit.xml", f"junit.xml: {_JUNIT}, not a baseline"),
        (("check", "run.json", "--baseline", "{f}"), "check.json", f"check.json: {_CHECK}, not a baseline"),
    ],
)
def test_a_guarddiag_file_given_to_the_wrong_command_is_named_with_its_reader(files, command, name, says):
    proc = run_guarddiag(*(a.format(f=name) for a in command), cwd=files)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert says in line and line.startswith("guarddiag: "), line
    assert "upgrade guarddiag" not in line and "capture the log with" not in line and "Traceback" not in proc.stderr


def test_the_right_files_still_read(files, tmp_path):
    assert run_guarddiag("diff", "run.json", "merged.json", cwd=files).returncode == 0
    assert run_guarddiag("check", "run.json", "--baseline", "base.yaml", cwd=files).returncode == 0
    shutil.copy(files / "run.json", tmp_path / "record.txt")  # a run record under another name reads as one
    proc = run_guarddiag("explain", "record.txt", cwd=tmp_path)
    assert proc.returncode == 0 and "forward" in proc.stdout, proc.stderr


def _trace(folder: Path) -> dict:
    shutil.copy(SCENARIOS / "module_int_attribute.py", folder / "model.py")
    env = {**os.environ, "TORCH_TRACE": str(folder / "trace")}
    proc = subprocess.run([sys.executable, "model.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {}


@pytest.fixture
def trace_dir():
    """A real TORCH_TRACE=DIR folder: a scenario that recompiles twice, run by the test's own torch, once per
    session (tests/shared_runs.py)."""
    return shared("torch-trace-of-a-scenario", _trace)[0]


@pytest.mark.parametrize("command", [("diff", "{f}", "{f}"), ("check", "{f}", "--max-recompiles", "9")])
def test_a_torch_trace_given_for_a_record_is_named_with_the_commands_that_read_it(trace_dir, command):
    (trace,) = (trace_dir / "trace").iterdir()
    proc = run_guarddiag(*(a.format(f=f"trace/{trace.name}") for a in command), cwd=trace_dir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "TORCH_TRACE structured trace" in line and "guarddiag parse and explain read it" in line, line


@pytest.mark.parametrize("command", [("parse", "{f}"), ("parse", "trace"), ("explain", "{f}")])
def test_a_torch_trace_is_read_not_as_a_log_that_compiled_nothing(trace_dir, command):
    # Its glog-prefixed JSON lines are torch lines: parse once said "0 compiled functions" and exited 0.
    (trace,) = (trace_dir / "trace").iterdir()
    proc = run_guarddiag(*(a.format(f=f"trace/{trace.name}") for a in command), cwd=trace_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 compiled functions" not in proc.stdout and "forward" in proc.stdout, proc.stdout
