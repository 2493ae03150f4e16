"""``guarddiag run`` of a bundled scenario (scenarios/), once per test session: the scenario tests
(tests/e2e/run/test_scenarios.py) and the tests that need a plain run of a scenario read the same run, which
costs seconds of torch each time (tests/shared_runs.py)."""

from __future__ import annotations

import json

from tests.conftest import SCENARIOS
from tests.shared_runs import Result, guarddiag_once


def scenario_run(name: str) -> Result:
    """``guarddiag run scenarios/NAME.py --out run.json -f json``, made once per session in a folder of its own
    (read only: a command that writes runs on ``copy_of`` it). Its stdout is the script's own output, then the
    report in JSON. torch writes the TORCH_TRACE of the run into the folder's ``trace/``."""
    return guarddiag_once({}, "run", str(SCENARIOS / f"{name}.py"), "--out", "run.json", "-f", "json", env={"TORCH_TRACE": "trace"})


def scenario_record(name: str) -> dict:
    """The run record of ``scenario_run(name)``, which must have succeeded."""
    proc = scenario_run(name)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((proc.folder / "run.json").read_text())
