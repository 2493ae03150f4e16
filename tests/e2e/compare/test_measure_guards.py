"""``compare --measure-guards``: every configuration's calls have their cache lookups measured, so a guard filter's
effect is shown as what calls paid, beside torch's compile-time figure (issue 28; real torch, eager backend)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_guarddiag

pytestmark = pytest.mark.torch
BLOCKS = FIXTURES / "torchmetrics" / "guard_blocks.py"
FILTER = "skip_guard_on_inbuilt_nn_modules_unsafe"


def test_each_configuration_measures_what_its_calls_paid(tmp_path):
    done = run_guarddiag("compare", "--measure-guards", "--guard-filter", FILTER, str(BLOCKS), "-j", "2", "-f", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {g["label"]: g for g in json.loads(done.stdout)["guards"] if g["function"]["name"] == "forward"}
    assert set(rows) == {"baseline", f"compile.guard_filter_fn={FILTER}"}
    for row in rows.values():
        # 6 calls, 3 of them compile (an entry's first call is no timed lookup): 3 timed, each a positive time.
        assert row["measured_calls"] == 3 and 0 < row["measured_median_us"] < 100_000, row
    assert rows[f"compile.guard_filter_fn={FILTER}"]["listed_last"] < rows["baseline"]["listed_last"]
    table = run_guarddiag("compare", "--measure-guards", "--guard-filter", FILTER, str(BLOCKS), "-j", "2", cwd=tmp_path)
    assert table.returncode == 0 and "measured per call" in table.stdout and "(3 calls)" in table.stdout


def test_without_the_option_nothing_is_measured(tmp_path):
    done = run_guarddiag("compare", "--guard-filter", FILTER, str(BLOCKS), "-j", "2", "-f", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(g["measured_median_us"] is None and g["measured_calls"] is None for g in json.loads(done.stdout)["guards"])
