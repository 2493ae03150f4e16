"""A record read from a TORCH_TRACE of torch < 2.5 (tests/fixtures/traces/torch-2.4.1), whose torch records no
call refused at a recompile limit: check says it cannot check its limit hits, and does not fail for it."""

from __future__ import annotations

from guarddiag.config import Settings
from guarddiag.gate import evaluate
from guarddiag.pipeline import parse_logs
from guarddiag.render.gate import render_text
from guarddiag.report import run_report
from tests.conftest import ROOT

TRACES = ROOT / "tests" / "fixtures" / "traces"


def test_the_gate_says_it_cannot_check_the_limit_hits_of_a_24_trace():
    report = run_report(parse_logs([str(TRACES / "torch-2.4.1" / "recompile_limit")]))
    result = evaluate({"trace.json": report}, None, Settings(max_recompiles=9))
    assert [f.kind for f in result.findings] == ["limits_unknown"] and result.exit_code == 0
    assert "limit hits are not checked" in render_text(result)


def test_a_213_trace_is_checked_for_its_limit_hits():
    report = run_report(parse_logs([str(TRACES / "torch-2.13.0" / "recompile_limit")]))
    result = evaluate({"trace.json": report}, None, Settings(max_recompiles=9, fail_on_limit_hit=True))
    assert [f.kind for f in result.findings] == ["limit_hit"] and result.exit_code != 0
