"""Names the user knows, through the installed guarddiag with real torch (eager backend): one name per
function in run, explain and check; `explain SCRIPT -- ARGS`; `explain RECORD` once its run folder is gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_guarddiag

pytestmark = pytest.mark.torch

STACK_SLOTS = FIXTURES / "causes" / "stack_slots.py"
HEADS = FIXTURES / "causes" / "module_dict_heads.py"

ARGV_SCRIPT = '''\
import sys
import torch


@torch.compile(backend="eager")
def scale(x, k):
    return x * k


for k in range(int(sys.argv[1])):
    scale(torch.ones(2), k)
print("ran with", sys.argv[1:])
'''


def test_run_explain_and_check_name_each_function_alike(tmp_path: Path):
    script = tmp_path / "stack_slots.py"
    shutil.copy(STACK_SLOTS, script)
    run = run_guarddiag("run", script.name, "--out", "run.json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    resumed = ["forward, after the graph break at line 30 (", "forward, after the graph break at line 31 ("]
    for label in resumed:
        assert label in run.stdout
    assert "torch_dynamo_resume" not in run.stdout
    # the slot whose expression the source tells is named by it, in the cause and in what is dynamic
    assert "size of tensor `self.encoder(x)` at dim 0" in run.stdout
    explained = run_guarddiag("explain", "run.json", cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr[-2000:]
    titles = [line.rsplit(": ", 1)[0] for line in explained.stdout.splitlines() if line.startswith("forward")]
    rows = [line.split("  ")[0] for line in run.stdout.splitlines() if line.startswith("forward") and "  " in line]
    assert len(rows) == 5 and sorted(titles) == sorted(rows), (titles, rows)
    assert "`self.encoder(x)`: tensor float32" in explained.stdout
    check = run_guarddiag("check", "run.json", "--max-recompiles", "0", "--format", "json", cwd=tmp_path)
    labels = {r["label"] for r in json.loads(check.stdout)["rows"]}
    resumed.append("forward, after the graph break at line 18 (")  # Noisy.forward's, after its print
    assert {label for label in labels if "graph break" in label} == {f"{r}stack_slots.py)" for r in resumed}


def test_a_cause_inside_torchs_module_dict_is_placed_at_the_users_line(tmp_path: Path):
    script = tmp_path / "heads.py"
    shutil.copy(HEADS, script)
    proc = run_guarddiag("run", script.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "at heads.py:16 in forward: return self.heads[task](self.trunk(x))" in proc.stdout
    assert "container.py" not in proc.stdout


@pytest.mark.slow
def test_explain_passes_arguments_to_the_script_as_run_does(tmp_path: Path):
    (tmp_path / "argv.py").write_text(ARGV_SCRIPT)
    # without its argument the script fails (IndexError): exit 0 says it got "1", one compile says "1" it was
    proc = run_guarddiag("explain", "argv.py", "--", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "scale (argv.py:5): 1 cache entry, 0 recompiles" in proc.stdout
    refused = run_guarddiag("explain", "some.log", "--", "3", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "are for a script" in refused.stderr


@pytest.mark.slow
def test_explain_of_a_record_whose_run_folder_is_gone(tmp_path: Path):
    (tmp_path / "argv.py").write_text(ARGV_SCRIPT)
    proc = run_guarddiag("run", "argv.py", "--out", "kept.json", "--", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    folder = Path(json.loads((tmp_path / "kept.json").read_text())["log_path"]).parent
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    cleaned = run_guarddiag("clean", cwd=tmp_path)
    assert cleaned.returncode == 0 and not folder.exists()
    # a run folder copied whole keeps explain working: its run.json finds the torch.log beside it
    again = run_guarddiag("explain", str(moved / "run.json"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "scale (argv.py:5): 2 cache entries, 1 recompiles" in again.stdout
    # a record whose log is gone: one line, exit 2, what is missing and the command that makes it again
    gone = run_guarddiag("explain", "kept.json", cwd=tmp_path)
    assert gone.returncode == 2 and gone.stdout == ""
    assert gone.stderr.count("\n") == 1
    assert "torch.log is gone" in gone.stderr and "guarddiag explain argv.py -- 2" in gone.stderr
