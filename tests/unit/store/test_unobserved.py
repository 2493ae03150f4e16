"""The record's ``unobserved`` processes: read back as written, and a record before issue 24 (each
process only its command line, a string) still read; ``check`` does not compare a run that has one."""

from __future__ import annotations

import json

from guarddiag.config import Settings
from guarddiag.gate import evaluate
from guarddiag.model import ParseStats, Run, Unobserved, uncounted
from guarddiag.report import record_dict, run_report, run_reports
from guarddiag.store import run_from_dict

WORKER = Unobserved("python -E worker.py", pid=7, reason="ignore_environment", torch=True)
NO_TORCH = Unobserved("python -c 'print(1)'", pid=8, reason="pythonpath", torch=False)


def _run(*unobserved: Unobserved) -> Run:
    return Run(functions=(), parse=ParseStats(), source="run", unobserved=unobserved)


def test_unobserved_processes_round_trip_and_old_records_still_read():
    run = _run(WORKER, NO_TORCH)
    assert run_from_dict(json.loads(json.dumps(record_dict(run_report(run))))) == run
    old = record_dict(run_report(_run()))
    old["unobserved"] = ["/usr/bin/python3 -c import torch"]
    (read,) = run_from_dict(old).unobserved
    assert read == Unobserved("/usr/bin/python3 -c import torch") and read in uncounted(run_from_dict(old))


def test_check_does_not_compare_a_run_whose_worker_loaded_torch_unobserved():
    assert evaluate(run_reports({"s.py": _run(NO_TORCH)}), None, Settings()).exit_code == 0
    result = evaluate(run_reports({"s.py": _run(WORKER, NO_TORCH)}), None, Settings())
    assert result.exit_code == 3 and [f.kind for f in result.findings] == ["script_failed"]
