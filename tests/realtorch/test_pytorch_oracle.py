"""PyTorch's own recompile tests as an outside oracle for guarddiag's counts.

``tests/oracle/pt_*.py`` port the compile-count tests of pytorch's ``test/dynamo/test_recompiles.py``
and ``test/dynamo/test_recompile_ux.py`` (tests/oracle/README.md lists them all). Each script keeps
the test's own assertions, so it fails where torch behaves otherwise, and ends by writing torch's own
account of the run (tests/oracle/_truth.py: every compilation-metrics record, per function).

Each script runs once through the installed ``guarddiag run``; per function (name, file, line) its
``compiles`` must equal torch's compiles (records that compiled, plus those whose compile failed) and
``len(limit_hits)`` torch's attempts refused at a recompile limit; the totals likewise. torch writes a
TORCH_TRACE of the same run (``TORCH_TRACE`` passes to the script): ``guarddiag parse`` of it must give
torch's counts too, and the run's functions field by field (issue #27).

In one pytest process the runs are started ahead of the tests that read them, ``GUARDDIAG_ORACLE_JOBS``
at a time (default 2), for the scripts that were collected (``-k`` picks fewer). Under pytest-xdist
(``make test``) each test runs its own script when it comes: the workers already share the cores, and a
worker would not know which of the collected tests are its own. Each run costs about 4-5 s of CPU, most
of it importing torch: the whole module needs about 5 CPU-minutes, 2.5 minutes on two idle cores.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_guarddiag

ORACLE = ROOT / "tests" / "oracle"
SCRIPTS = sorted(p.name for p in ORACLE.glob("pt_*.py"))
# What ``make test`` runs of the oracle: a plain recompile, the limit under a stance, several entries failing
# at once (scenarios and corpus scripts count the rest there). Every port runs in ``make test-oracle`` (about 5 CPU-minutes), run before an
# issue that touches counting is resolved; ``make test-slow`` runs the rest of the end-to-end suite.
IN_MAKE_TEST = frozenset({"pt_simple_module_recompile.py", "pt_fail_on_recompile_limit_hit.py", "pt_multiple_guard_fails_report_all.py"})
assert set(SCRIPTS) >= IN_MAKE_TEST, IN_MAKE_TEST - set(SCRIPTS)
TEST_NAME = "test_guarddiag_counts_match_torch"

pytestmark = pytest.mark.torch


def _jobs() -> int:
    try:
        return max(1, int(os.environ.get("GUARDDIAG_ORACLE_JOBS", "2")))
    except ValueError:
        return 2


def _xdist_workers() -> int:
    """How many pytest-xdist workers run the suite (0: none, this is the only pytest process)."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")) if "PYTEST_XDIST_WORKER" in os.environ else 0


def _run(script: str, workdir: Path) -> tuple[Path, str]:
    """``guarddiag run`` of one oracle script in WORKDIR; torch's account goes to WORKDIR/truth.json."""
    env = {"GUARDDIAG_ORACLE_TRUTH": str(workdir / "truth.json"), "PYTHONDONTWRITEBYTECODE": "1", "TORCH_TRACE": str(workdir / "trace")}
    parallel = _xdist_workers() or _jobs()
    if parallel > 1 and "OMP_NUM_THREADS" not in os.environ:  # parallel runs share the cores, as guarddiag's own do
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // parallel))
    proc = run_guarddiag("run", str(ORACLE / script), "--out", str(workdir / "run.json"), cwd=workdir, env=env)
    return workdir, f"exit status {proc.returncode}\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def oracle_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Script name -> (its run folder, what guarddiag printed). In one pytest process the runs of every
    collected case of this module are started at once, in test order; under xdist each runs when asked."""
    if _xdist_workers():
        yield lambda script: _run(script, tmp_path_factory.mktemp(Path(script).stem))
        return
    wanted = [
        item.callspec.params["script"]
        for item in request.session.items
        if getattr(item, "originalname", None) == TEST_NAME and hasattr(item, "callspec") and item.module is request.module
    ]
    pool = ThreadPoolExecutor(max_workers=_jobs())
    futures: dict[str, Future] = {}
    for script in dict.fromkeys(wanted):
        futures[script] = pool.submit(_run, script, tmp_path_factory.mktemp(Path(script).stem))
    yield lambda script: futures[script].result()
    pool.shutdown(wait=True, cancel_futures=True)


def _place(file: str | None, cwd: Path) -> str:
    if not file:
        return "?"
    path = Path(file)
    return str((path if path.is_absolute() else cwd / path).resolve())


def _label(name: str, place: str, line: object) -> str:
    shown = Path(place).name if place.startswith(str(ORACLE)) else place
    return f"{name} ({shown}:{line})"


def torch_counts(truth: dict) -> dict[str, tuple[int, int]]:
    """Function -> (compiles, attempts refused at the limit), as torch's own records count them."""
    counts = {}
    for f in truth["functions"]:
        place = _place(f["co_filename"], ORACLE)
        counts[_label(f["co_name"], place, f["co_firstlineno"])] = (f["ok"] + f["failed"], f["refused"])
    return counts


def guarddiag_counts(run: dict, cwd: Path) -> dict[str, tuple[int, int]]:
    """Function -> (compiles, limit hits), as guarddiag's run record counts them."""
    counts = {}
    for f in run["functions"]:
        counts[_label(f["name"], _place(f["file"], cwd), f["line"])] = (f["compiles"], len(f["limit_hits"]))
    return counts


def _table(expected: dict[str, tuple[int, int]], actual: dict[str, tuple[int, int]], truth: dict, run: dict) -> str:
    lines = ["per function: torch (compiles, refused at the limit) vs guarddiag (compiles, limit hits)"]
    for key in sorted(set(expected) | set(actual)):
        want, got = expected.get(key), actual.get(key)
        mark = "" if want == got else "   <-- differs"
        lines.append(f"  {key}: torch {want if want else 'absent'}  guarddiag {got if got else 'absent'}{mark}")
    for f in truth["functions"]:
        lines.append(
            f"  torch ids of {f['co_name']}:{f['co_firstlineno']}: compiled {f['compile_ids']} refused {f['refused_ids']}"
            + (f" failed {f['fail_types']}" if f["failed"] else "")
        )
    for f in run["functions"]:
        lines.append(f"  guarddiag limit hits of {f['name']}:{f['line']}: {[h.get('compile_id') for h in f['limit_hits']]}")
    return "\n".join(lines)


def test_every_script_names_the_pytorch_test_it_ports():
    for script in SCRIPTS:
        text = (ORACLE / script).read_text(encoding="utf-8")
        assert text.startswith('"""Port of '), script
        assert "test/dynamo/test_recompile" in text.split('"""')[1], script
        assert text.rstrip().endswith("_truth.write()"), script
        assert script in (ORACLE / "README.md").read_text(encoding="utf-8"), f"{script} is not in tests/oracle/README.md"


@pytest.mark.parametrize("script", [pytest.param(s, marks=() if s in IN_MAKE_TEST else pytest.mark.oracle) for s in SCRIPTS])
def test_guarddiag_counts_match_torch(script: str, oracle_run):
    workdir, output = oracle_run(script)
    record = workdir / "run.json"
    assert record.exists(), f"guarddiag wrote no run record\n{output}"
    run = json.loads(record.read_text(encoding="utf-8"))
    assert run["status"] == "ok", f"the script did not succeed: status {run['status']}, {run.get('error')}\n{output}"
    truth_path = workdir / "truth.json"
    assert truth_path.exists(), f"the script never reached _truth.write()\n{output}"
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    assert not truth["unattributed_refusals"], truth["unattributed_refusals"]

    expected = torch_counts(truth)
    actual = guarddiag_counts(run, workdir)
    totals = truth["totals"]
    expected["(total)"] = (totals["ok"] + totals["failed"], totals["refused"])
    actual["(total)"] = (run["totals"]["compiles"], run["totals"]["limit_hits"])
    assert actual == expected, _table(expected, actual, truth, run)

    if not (workdir / "trace").exists():  # torch opens its trace at its first record: a run that compiled nothing has none
        assert expected["(total)"] == (0, 0), output
        return
    parsed = run_guarddiag("parse", "trace", "--out", "trace.json", "--strict", cwd=workdir)
    assert parsed.returncode == 0, f"parse of the run's TORCH_TRACE failed\n{parsed.stderr}"
    traced = json.loads((workdir / "trace.json").read_text(encoding="utf-8"))
    of_trace = guarddiag_counts(traced, workdir)
    of_trace["(total)"] = (traced["totals"]["compiles"], traced["totals"]["limit_hits"])
    assert of_trace == expected, "the TORCH_TRACE: " + _table(expected, of_trace, truth, traced)
    assert traced["functions"] == run["functions"]
