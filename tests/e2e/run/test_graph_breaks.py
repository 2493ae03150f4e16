"""Graph breaks of real scripts (``.item()``, ``print``, ``backward()``, a data-dependent branch) counted as torch
counts them, through the installed command; torch's own records of them, written by the script, are the truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, in_make_test, run_guarddiag

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("kind", in_make_test(["item", "print", "backward", "branch"], {"item"}))
def test_graph_breaks_per_compile_equal_torchs_records(kind: str, tmp_path: Path):
    out, truth = tmp_path / "run.json", tmp_path / "truth.json"
    proc = run_guarddiag(
        "run", str(FIXTURES / "graph_breaks" / "breaks.py"), "--out", str(out), "--", kind,
        cwd=tmp_path, env={"GUARDDIAG_BREAKS_TRUTH": str(truth)},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    record, torch_says = json.loads(out.read_text()), json.loads(truth.read_text())
    by_compile: dict[str, int] = {}
    for f in record["functions"]:
        for g in f["graph_breaks"]:
            by_compile[g["compile_id"]] = by_compile.get(g["compile_id"], 0) + 1
    assert by_compile == torch_says["by_compile"]
    assert record["totals"]["graph_breaks"] == sum(torch_says["by_compile"].values()) == 2
    assert f"in 2 compiles: {record['functions'][0]['graph_breaks'][0]['reason'][:60]}" in proc.stdout
