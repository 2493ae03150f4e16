"""Compile time, the near-limit warning and compare's output check, through the installed command with
real torch (eager backend)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_guarddiag
from tests.flag_catalog import cache_flag_catalog

pytestmark = pytest.mark.torch
NEAR_LIMIT = FIXTURES / "timing" / "near_limit.py"


@pytest.mark.slow
def test_a_function_seven_variants_deep_gets_its_time_and_one_warning(tmp_path: Path):
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", str(NEAR_LIMIT), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    (step,) = record["functions"]
    assert (step["compiles"], step["recompile_limit"]) == (7, 8)
    assert 0 < step["recompile_s"] < step["compile_s"] < record["duration_s"]
    assert record["totals"]["compile_s"] == step["compile_s"]
    assert proc.stdout.count("near the recompile limit: 7 of 8 variants compiled (recompile_limit 8 at its last compile)") == 1
    assert f"compile time {step['compile_s']:.2f} s, {step['recompile_s']:.2f} s (" in proc.stdout
    # The record's numbers are torch's: its ledger in the run folder holds them.
    ledger = Path(record["log_path"]).with_name("torch.compiles.jsonl").read_text().splitlines()[1:]
    seconds = [json.loads(line)["compile_s"] for line in ledger]
    assert step["compile_s"] == pytest.approx(sum(seconds)) and step["recompile_s"] == pytest.approx(sum(seconds[1:]))


@pytest.mark.slow
def test_the_limit_the_script_sets_is_the_one_warned_about(tmp_path: Path):
    script = tmp_path / "limit_seven.py"
    script.write_text(NEAR_LIMIT.read_text().replace(
        "torch._dynamo.config.automatic_dynamic_shapes = False",
        "torch._dynamo.config.automatic_dynamic_shapes = False\ntorch._dynamo.config.recompile_limit = 7",
    ))
    proc = run_guarddiag("run", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    at = "at the recompile limit: 7 of 7 variants compiled (recompile_limit 7 at its last compile); new variants run eagerly"
    assert at in proc.stdout
    assert "near the recompile limit" not in proc.stdout


HOOK = """
import torch

lin = torch.nn.Linear(2, 2)
model = torch.compile(lin, backend="eager")
x = torch.ones(1, 2)
print("first call", tuple(model(x).shape))
calls = []
lin.register_forward_hook(lambda module, args, out: calls.append(1))
for _ in range(3):
    model(x)
print("hook calls:", len(calls))
"""


@pytest.mark.slow
def test_compare_says_a_flip_changed_what_the_script_printed_and_where_each_run_is(tmp_path: Path):
    """skip_nnmodule_hook_guards (on by default) never runs a hook added after the first compiled call;
    turning it off runs the hook: the output differs on its second line."""
    script = tmp_path / "late_hook.py"
    script.write_text(textwrap.dedent(HOOK))
    out = tmp_path / "compare.json"
    cache_flag_catalog(tmp_path)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = run_guarddiag("compare", str(script), "--flag", "skip_nnmodule_hook_guards", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    base, flipped = json.loads(out.read_text())["runs"]
    assert base["stdout_change"] is None
    assert flipped["stdout_change"] == {"line": 2, "baseline": "hook calls: 0", "variant": "hook calls: 3"}
    assert (
        "skip_nnmodule_hook_guards=false: stdout differs from the baseline run's (first difference at line 2: "
        "'hook calls: 0' in the baseline, 'hook calls: 3' here): the flip may change what the script does"
    ) in proc.stdout
    for run in (base, flipped):
        (folder,) = run["folders"]
        assert (Path(folder) / "stdout.txt").is_file()
        assert f"{run['label']}: {folder}" in proc.stdout
    markdown = run_guarddiag("compare", str(script), "--flag", "skip_nnmodule_hook_guards", "-f", "markdown", cwd=tmp_path)
    assert markdown.returncode == 0
    assert "- note: skip_nnmodule_hook_guards=false: stdout differs from the baseline run's (first difference at line 2" in markdown.stdout
    assert "- baseline: " in markdown.stdout
