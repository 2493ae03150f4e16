"""Whose code calls a compiled library function decides the size hint: a tensor the library builds and passes
(generate() calling a compiled forward) is out of the script's reach; one the script passes itself
(``model(**batch)`` on a compiled transformers model) takes a line of the script.

A small package in a ``site-packages`` folder of the test's own stands for the library: its ``forward`` is
compiled by the script (eager backend), and either its ``generate`` calls it with sizes it makes or the script
calls it directly. The run records who called it (``functions[].callers``); explain's hint follows; the hint
for the script's own calls, applied, removes the recompile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.apply_hints import apply_lines
from tests.conftest import run_guarddiag, torch_truth

pytestmark = pytest.mark.torch

LIBRARY = '''import torch


def forward(x):
    return (x * 2).sum(-1)


def generate(fn, steps):
    return [fn(torch.ones(3, n)) for n in range(2, 2 + steps)]
'''
HEAD = """import sys

import torch

sys.path.insert(0, "site-packages")
import toylib

fn = torch.compile(toylib.forward, backend="eager")
"""
BY_LIBRARY = HEAD + "toylib.generate(fn, 3)\n"
BY_SCRIPT = HEAD + "for n in (2, 3, 4):\n    fn(torch.ones(3, n))\n"


def _explained(tmp_path: Path, script: str) -> tuple[dict, dict]:
    """The run record's `forward` and explain's hints for it."""
    package = tmp_path / "site-packages" / "toylib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(LIBRARY, encoding="utf-8")
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    proc = run_guarddiag("run", "script.py", "--out", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (function,) = [f for f in json.loads((tmp_path / "run.json").read_text())["functions"] if f["name"] == "forward"]
    explained = run_guarddiag("explain", "run.json", "--format", "json", cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr[-3000:]
    (hints,) = [f["hints"] for f in json.loads(explained.stdout)["functions"] if f["name"] == "forward"]
    return function, hints


def test_a_tensor_the_library_builds_is_out_of_the_scripts_reach(tmp_path: Path):
    function, hints = _explained(tmp_path, BY_LIBRARY)
    assert function["recompiles"] == 1 and function["callers"] == ["toylib"]
    assert [h["id"] for h in hints] == ["library_input"]


@pytest.mark.slow
def test_a_tensor_the_script_passes_to_a_library_function_gets_a_line_of_the_script(tmp_path: Path):
    function, hints = _explained(tmp_path, BY_SCRIPT)
    assert function["recompiles"] == 1 and function["callers"] == [""]
    (hint,) = hints
    assert hint["id"] != "library_input"
    # The setting reaches the tensor wherever it is made: applied to the script, the recompile goes.
    choice = next(c for c in hint["choices"] if c["id"] == "dynamic_sources")
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / "site-packages").symlink_to(tmp_path / "site-packages")
    (fixed / "script.py").write_text(apply_lines(BY_SCRIPT, choice["lines"]), encoding="utf-8")
    after = torch_truth(fixed / "script.py", fixed)
    assert torch_truth(tmp_path / "script.py", tmp_path) != after
    assert list(after.values()) == [1]
