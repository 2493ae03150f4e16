"""Guard budgets through the installed guarddiag (issue 28): `baseline` records each function's guards, `check`
passes the same script and fails (exit 5) a version with more guards, and a [tool.guarddiag] budget fails it too."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from tests.conftest import run_guarddiag

pytestmark = pytest.mark.torch

# Blocks from the environment: the same script with more blocks has more guards (on each block's parameters).
MODEL = textwrap.dedent(
    """\
    import os

    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, blocks: int) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(blocks))
            self.mode = 0

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x * (self.mode + 1)


    model = Model(int(os.environ.get("MODEL_BLOCKS", "2")))
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(2, 8)
    for mode in (0, 1, 2):  # three cache entries: the gated latency is the cheapest one's
        model.mode = mode
        compiled(x)
    """
)


def test_more_guards_than_the_baseline_fail_the_gate(workdir):
    (workdir / "model.py").write_text(MODEL)
    made = run_guarddiag("baseline", "model.py", cwd=workdir)
    assert made.returncode == 0, made.stdout + made.stderr
    (forward,) = yaml.safe_load((workdir / "guarddiag-baseline.yaml").read_text())["scripts"][0]["functions"]
    guards, latency = forward["guards"], forward["guard_latency_us"]
    assert guards > 0 and latency > 0

    same = run_guarddiag("check", "model.py", cwd=workdir)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "OK: no recompile regression" in same.stdout
    assert "is measured once, with a cold CPU cache" in same.stdout

    grown = run_guarddiag("check", "model.py", "-f", "json", cwd=workdir, env={"MODEL_BLOCKS": "4"})
    assert grown.returncode == 5, grown.stdout + grown.stderr
    report = json.loads(grown.stdout)
    (finding,) = [f for f in report["findings"] if f["kind"] == "guard_count_grew"]
    assert finding["failing"] and finding["guard"]["baseline"] == guards and finding["guard"]["now"] > guards
    assert f"more than the baseline's {guards}" in finding["message"]
    assert report["rows"][0]["status"] == "REGRESSION" and "Traceback" not in grown.stderr
    assert report["rows"][0]["guards_baseline"] == guards


def test_a_budget_in_pyproject_fails_a_function_above_it(workdir):
    (workdir / "model.py").write_text(MODEL)
    (workdir / "pyproject.toml").write_text("[tool.guarddiag]\nscripts = ['model.py']\nmax_guards = 5\n")
    proc = run_guarddiag("check", cwd=workdir)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "over_guard_budget: forward (" in proc.stdout and "over the budget of 5 (not known in the baseline)" in proc.stdout
    assert "FAILED: 1 guard regression(s)" in proc.stdout
