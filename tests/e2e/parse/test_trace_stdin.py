"""A TORCH_TRACE piped to ``guarddiag parse -`` (issue #27): told from a text log by its first bytes, which are
looked at without being taken from standard input, and read as the same file given by name. The trace is one
recorded from torch 2.13 (tests/fixtures/traces)."""

from __future__ import annotations

import json

from tests.conftest import ROOT, run_guarddiag

TRACE = ROOT / "tests" / "fixtures" / "traces" / "torch-2.13.0" / "recompile_limit"


def test_a_piped_trace_reads_as_the_same_file_given_by_name():
    (file,) = TRACE.iterdir()
    piped = run_guarddiag("parse", "-", "-f", "json", stdin=file.read_text(encoding="utf-8"))
    named = run_guarddiag("parse", str(file), "-f", "json")
    assert piped.returncode == named.returncode == 0, piped.stderr + named.stderr
    by_pipe, by_name = json.loads(piped.stdout), json.loads(named.stdout)
    assert by_pipe["functions"] == by_name["functions"] and by_pipe["parse"] == by_name["parse"]
    assert by_pipe["totals"]["compiles"] == 8 and by_pipe["log_path"] == "standard input"


def test_a_piped_text_log_still_reads_as_a_log():
    log = TRACE.with_suffix(".log").read_text(encoding="utf-8")
    proc = run_guarddiag("parse", "-", "-f", "json", stdin=log)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert "trace_records" not in record["parse"] and record["totals"]["compiles"] == 8
