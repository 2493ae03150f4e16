"""model.lost_lines: one judgement of "the log lost lines" (torch counted more compiles than the log shows),
for a run's processes (compile_gaps, which the report, the gate and divergence read) and the watch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from guarddiag.ids import MAIN_PROCESS
from guarddiag.model import compile_gaps, lost_lines
from guarddiag.pipeline import parse_log
from tests.conftest import LOGS


@pytest.mark.parametrize(("torch_compiles", "logged", "lost"), [(None, 3, False), (3, 3, False), (2, 3, False), (4, 3, True), (1, 0, True)])
def test_a_log_lost_lines_where_torch_counted_more(torch_compiles, logged, lost):
    assert lost_lines(torch_compiles, logged) is lost


def test_a_run_whose_torch_counted_more_than_its_log_shows_has_a_gap_in_its_own_process():
    run = parse_log(str(LOGS / "torch-2.13.0" / "module_int_attribute.log"))
    seen = sum(f.compiles for f in run.functions)
    assert compile_gaps(replace(run, torch_compiles=seen)) == ()
    assert compile_gaps(replace(run, torch_compiles=seen + 2)) == ((MAIN_PROCESS, seen + 2, seen),)
