"""Calls a compiler stance refused to recompile (torch.compiler.set_stance), through the installed command with
real torch: counted per function as the script itself counts them (its compiled graphs count their runs), with
torch's reason classified, and failing ``check`` as a new limit hit does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, recorded_subject, run_guarddiag
from tests.flag_catalog import cache_flag_catalog
from tests.shared_runs import guarddiag_once

pytestmark = pytest.mark.torch
SERVE = FIXTURES / "stances" / "serve.py"


def _run(tmp_path: Path, mode: str, *extra: str) -> tuple[dict, dict, str]:
    """``guarddiag run serve.py MODE``: the record, the script's own count of refused calls, the report. Without
    extra options the run is made once per session and read by every test that needs it (tests/shared_runs.py)."""
    if not extra:
        proc = guarddiag_once({}, "run", str(SERVE), "--out", "run.json", "--", mode, env={"GUARDDIAG_STANCE_TRUTH": "truth.json"})
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return (json.loads((proc.folder / "run.json").read_text()), json.loads((proc.folder / "truth.json").read_text()),
                proc.stdout)
    truth = tmp_path / f"truth-{mode}.json"
    out = tmp_path / f"run-{mode}.json"
    proc = run_guarddiag(
        "run", str(SERVE), "--out", str(out), *extra, "--", mode, cwd=tmp_path, env={"GUARDDIAG_STANCE_TRUTH": str(truth)}
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), json.loads(truth.read_text()), proc.stdout


def _refused(record: dict) -> dict[str, int]:
    """Refused calls per function, named as the script's truth names them (the module by its class)."""
    return {("Sequential" if f["name"] == "inner" else f["name"]): f.get("refused_calls", 0) for f in record["functions"]}


def test_eager_on_recompile_counts_each_call_it_ran_eagerly(tmp_path: Path):
    record, truth, report = _run(tmp_path, "eager")
    assert _refused(record) == truth == {"Sequential": 6, "scale": 8}
    assert record["stances"] == [{"stance": "eager_on_recompile", "counted": True, "process": ""}]
    assert record["totals"]["refused_calls"] == 14
    # Counting changed nothing torch did: the same compiles as without a stance (two sizes, each function).
    assert [f["compiles"] for f in record["functions"]] == [2, 2]
    module = next(f for f in record["functions"] if f["name"] == "inner")
    causes = {(r["cause"]["category"], recorded_subject(r["cause"])) for r in module["refusals"]}
    assert causes == {("tensor", "size of tensor `args[0]` on argument `args` at dim 0")}
    # Each refusal keeps torch's reason against every cache entry it was checked against.
    assert all(r["entries"] == 2 and len(r["reasons"]) == 2 for r in module["refusals"])
    assert "6 calls ran eagerly instead of recompiling (stance eager_on_recompile): tensor: size of tensor `args[0]`" in report
    assert "8 calls ran eagerly instead of recompiling (stance eager_on_recompile): value: value of argument `k`" in report
    assert ", 14 calls refused by a compiler stance," in report


@pytest.mark.slow
def test_a_caught_fail_on_recompile_is_counted(tmp_path: Path):
    record, truth, report = _run(tmp_path, "fail")
    assert _refused(record) == truth == {"Sequential": 6, "scale": 0}
    module = next(f for f in record["functions"] if f["name"] == "inner")
    assert {r["stance"] for r in module["refusals"]} == {"fail_on_recompile"}
    assert "6 calls raised RuntimeError instead of recompiling (stance fail_on_recompile)" in report


def _settings(tmp_path: Path, mode: str) -> None:
    """A settings file that checks serve.py MODE (check takes a script's arguments from its settings)."""
    (tmp_path / "guarddiag.yaml").write_text(f"scripts:\n  - path: {SERVE}\n    args: [{mode}]\n")


@pytest.mark.slow
def test_skip_guard_eval_unsafe_is_said_not_counted_and_check_does_not_compare(tmp_path: Path):
    record, truth, report = _run(tmp_path, "unsafe")
    assert record["stances"] == [{"stance": "skip_guard_eval_unsafe", "counted": False, "process": ""}]
    assert "warning: compiled code ran with skip_guard_eval_unsafe=True" in report
    _settings(tmp_path, "unsafe")
    proc = run_guarddiag("check", "--max-recompiles", "5", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout[-2000:]
    assert "skip_guard_eval_unsafe=True" in proc.stdout and "not compared with the baseline" in proc.stdout


@pytest.mark.slow
def test_check_fails_on_refused_calls_unless_allowed_or_recorded(tmp_path: Path):
    _settings(tmp_path, "eager")
    proc = run_guarddiag("check", "--max-recompiles", "1", "-f", "json", cwd=tmp_path)
    assert proc.returncode == 5, proc.stdout[-2000:]
    report = json.loads(proc.stdout[proc.stdout.index("{") :])
    refused = [f for f in report["findings"] if f["kind"] == "refused"]
    assert sorted((f["function"], f["allowed"]) for f in refused) == [("inner", 0), ("scale", 0)]
    assert all(f["failing"] for f in refused)
    assert sorted(r["refused_calls"] for r in report["rows"]) == [6, 8]
    # The same run's record (serve.py eager, shared): check gates it as it gates the script's run, and it
    # keys it as the settings' script with its arguments.
    record = tmp_path / "eager.json"
    record.write_text(json.dumps(_run(tmp_path, "eager")[0]))
    allowed = run_guarddiag("check", record.name, "--max-recompiles", "1", "--max-refused-calls", "8", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stdout[-2000:]
    # Recorded in the baseline, the same refused calls pass; the baseline says how many.
    baseline = tmp_path / "guarddiag-baseline.yaml"
    made = run_guarddiag("check", record.name, "--update", cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    assert "refused_calls: 8" in baseline.read_text()
    again = run_guarddiag("check", record.name, cwd=tmp_path)
    assert again.returncode == 0, again.stdout[-2000:]


@pytest.mark.slow
def test_diff_shows_the_refused_calls_a_stance_adds(tmp_path: Path):
    plain, stanced = tmp_path / "plain.json", tmp_path / "stanced.json"
    for out, mode in ((plain, "none"), (stanced, "eager")):
        out.write_text(json.dumps(_run(tmp_path, mode)[0]))  # the shared runs of serve.py MODE
    proc = run_guarddiag("diff", str(plain), str(stanced), "-f", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    functions = {f["name"]: f for f in json.loads(proc.stdout)["diffs"][0]["functions"]}
    assert (functions["scale"]["refused_calls_before"], functions["scale"]["refused_calls_after"]) == (0, 8)
    assert functions["scale"]["status"] == "worse"


@pytest.mark.inductor
def test_the_stance_locked_server_on_inductor(tmp_path: Path):
    """tests/corpus/stance_server.py: 5 of its 8 requests are of a batch size it was not warmed up on."""
    env = {"PYTHONPATH": str(ROOT / "tests" / "oracle")}
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", str(ROOT / "tests" / "corpus" / "stance_server.py"), "--out", str(out), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads(out.read_text())
    (served,) = record["functions"]
    assert (served["compiles"], served["refused_calls"]) == (2, 5)
    assert {recorded_subject(r["cause"]) for r in served["refusals"]} == {"size of tensor `args[0]` on argument `args` at dim 0"}
    assert "5 calls ran eagerly instead of recompiling (stance eager_on_recompile)" in proc.stdout
    check = run_guarddiag("check", "--max-recompiles", "1", str(ROOT / "tests" / "corpus" / "stance_server.py"), cwd=tmp_path, env=env)
    assert check.returncode == 5 and "refused: " in check.stdout, check.stdout[-2000:]


@pytest.mark.slow
def test_compare_without_a_flag_measures_the_calls_a_stance_refused(tmp_path: Path):
    """A cause with calls a stance refused is a cause compare answers: the flip that lets a compiled entry take
    those calls serves them (refused before -> after), measured as the script itself counts them."""
    report = tmp_path / "compare.json"
    cache_flag_catalog(tmp_path)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = run_guarddiag("compare", str(SERVE), "--out", str(report), "--", "eager", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(report.read_text())
    target = next(c for c in doc["causes"] if c["function"]["name"] == "inner")
    _, truth, _ = _run(tmp_path, "eager")
    assert target["refused_calls"] == truth["Sequential"] > 0
    flip = next(o for o in target["outcomes"] if o["flag"] == "compiler.dynamic_sources")
    (tmp_path / "flip").mkdir()
    _, after, _ = _run(tmp_path / "flip", "eager", "--flag", f"compiler.dynamic_sources={flip['value']}")
    # Per cause: a call still refused for another cause (a batch of one: sizes 0 and 1) is no call of this one.
    assert flip["refused_before"] == truth["Sequential"] and flip["refused_after"] <= after["Sequential"] < truth["Sequential"]
    assert (flip["run_refused_before"], flip["run_refused_after"]) == (sum(truth.values()), sum(after.values()))
    assert flip["works"] and flip["served"] == flip["refused_before"] - flip["refused_after"] > 0
    assert "calls a stance refused" in proc.stdout
