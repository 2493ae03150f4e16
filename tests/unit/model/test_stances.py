"""Calls a compiler stance refused to recompile, on run folders recorded with real stances
(tests/fixtures/stances/README.md): read from the ledger, attached to their functions with torch's reason
classified, kept in the record, reported in every format, and gated by ``check`` like a new limit hit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag.baseline import from_runs, load, save
from guarddiag.config import Settings
from guarddiag.diff import diff_runs
from guarddiag.errors import InputError
from guarddiag.gate import evaluate
from guarddiag.ids import Process
from guarddiag.ledger import RefusalRecord, read_stances
from guarddiag.merge import merge_runs
from guarddiag.model import Run, StanceUse
from guarddiag.pipeline import parse_log
from guarddiag.render import markdown, table
from guarddiag.render.gate import check_to_dict, render_text
from guarddiag.render.words import cause_subject
from guarddiag.report import record_dict, run_report, run_reports
from guarddiag.runlogs import read_run_logs
from guarddiag.store import run_from_dict
from tests.conftest import FIXTURES, ROOT, in_checkout

STANCES = FIXTURES / "stances"


def _run(name: str, tmp_path: Path | None = None) -> Run:
    """A recorded run folder read as `guarddiag run` reads it; with ``tmp_path``, from a copy whose
    neutral project root is this checkout (the script's source then says `k` is an argument)."""
    folder = STANCES / name
    if tmp_path is not None:
        for part in ("torch.log", "torch.compiles.jsonl"):
            (tmp_path / part).write_text(in_checkout((folder / part).read_text()))
        folder = tmp_path
    logs = read_run_logs(folder, folder / "torch.log", folder / "torch.compiles.jsonl")
    return Run(functions=logs.functions, parse=logs.stats, source="run", torch_version="2.13.0", stances=logs.stances)


def _truth(name: str) -> dict[str, int]:
    return json.loads((STANCES / name / "truth.json").read_text())


def _refused(run: Run) -> dict[str, int]:
    return {("Sequential" if f.name == "inner" else f.name): f.refused_calls for f in run.functions}


@pytest.mark.parametrize("name", ["eager-2.13", "fail-2.13", "unsafe-2.13"])
def test_refused_calls_equal_the_scripts_own_count(name: str):
    assert _refused(_run(name)) == _truth(name)


def test_each_refusal_keeps_its_highest_count_and_torchs_reasons():
    records = read_stances(STANCES / "eager-2.13" / "torch.compiles.jsonl")
    assert records.uses == (("eager_on_recompile", True),)
    # The ledger holds a count line per call up to 2, 4, ... and at exit; each refusal is read once.
    lines = [json.loads(line) for line in (STANCES / "eager-2.13" / "torch.compiles.jsonl").read_text().splitlines()]
    refused = [line for line in lines if "refused" in line]
    assert len(refused) > len(records.refusals)
    assert sum(r.calls for r in records.refusals) == 14
    assert all(r.entries == 2 and r.reasons is not None and len(r.reasons) == 2 for r in records.refusals)


def test_the_cause_is_classified_like_a_recompiles(tmp_path: Path):
    run = _run("eager-2.13", tmp_path)
    scale = next(f for f in run.functions if f.name == "scale")
    (refusal,) = scale.refusals
    assert refusal.cause is not None
    assert (refusal.stance, refusal.calls, refusal.cause.category, cause_subject(refusal.cause)) == (
        "eager_on_recompile", 8, "value", "value of argument `k`",
    )
    assert refusal.cause.location.endswith("serve.py:40 in scale") and refusal.cause.code == "return x * k"
    module = next(f for f in run.functions if f.name == "inner")
    # torch's `inner` lives in the recording's venv, not here: its `args` is named a local.
    assert {(r.cause.category, cause_subject(r.cause)) for r in module.refusals if r.cause} == {
        ("tensor", "size of tensor `args[0]` on local `args` at dim 0")
    }


def test_a_stance_that_cannot_be_counted_is_said_so():
    run = _run("unsafe-2.13")
    assert run.stances == (StanceUse("skip_guard_eval_unsafe", False),)
    text = table.render(run_report(run))
    assert "0 calls refused by a compiler stance (not all countable: see the warning)" in text
    assert "warning: compiled code ran with skip_guard_eval_unsafe=True" in text


def test_the_record_keeps_refusals_and_stances():
    run = _run("eager-2.13")
    back = run_from_dict(json.loads(json.dumps(record_dict(run_report(run)))))
    assert back.functions == run.functions and back.stances == run.stances
    data = record_dict(run_report(run))
    assert data["totals"]["refused_calls"] == 14
    scale = next(f for f in data["functions"] if f["name"] == "scale")
    assert scale["refused_calls"] == 8 and scale["refusals"][0]["stance"] == "eager_on_recompile"
    # A record without stances is as it was: no new keys.
    plain = record_dict(run_report(replace(run, functions=tuple(replace(f, refusals=()) for f in run.functions), stances=())))
    assert "stances" not in plain and "refused_calls" not in plain["totals"]
    assert all("refusals" not in f for f in plain["functions"])


def test_a_record_with_an_unknown_stance_is_refused():
    data = json.loads(json.dumps(record_dict(run_report(_run("eager-2.13")))))
    data["functions"][0]["refusals"][0]["stance"] = "eager_always"
    with pytest.raises(InputError, match="eager_always"):
        run_from_dict(data)


def test_every_format_shows_them(tmp_path: Path):
    run = _run("eager-2.13", tmp_path)
    text = table.render(run_report(run))
    assert "14 calls refused by a compiler stance" in text.splitlines()[0]
    assert "refused" in next(line for line in text.splitlines() if line.startswith("function"))
    assert "8 calls ran eagerly instead of recompiling (stance eager_on_recompile): value: value of argument `k`" in text
    md = markdown.render(run_report(run))
    assert "refused" in next(line for line in md.splitlines() if line.startswith("| function"))
    assert "6 calls ran eagerly instead of recompiling (stance eager_on_recompile)" in md
    fail = table.render(run_report(_run("fail-2.13")))
    assert "6 calls raised RuntimeError instead of recompiling (stance fail_on_recompile)" in fail


def _settings(**kw: object) -> Settings:
    return replace(Settings(root=Path("/home/user/project")), **kw)


def test_check_fails_on_refused_calls_the_baseline_did_not_have(tmp_path: Path):
    run = _run("eager-2.13", tmp_path)
    result = evaluate(run_reports({"serve.py": run}), None, _settings(max_recompiles=1))
    refused = [f for f in result.findings if f.kind == "refused"]
    assert sorted((f.name, f.allowed, f.baseline) for f in refused) == [("inner", 0, None), ("scale", 0, None)]
    assert result.exit_code == 5
    text = render_text(result)
    assert "refused: scale (stances/serve.py:38): 8 calls a compiler stance refused to recompile, 8 over the 0 allowed" in text
    assert "    8 calls ran eagerly instead of recompiling (stance eager_on_recompile): value: value of argument `k`" in text
    rows = check_to_dict(result)["rows"]
    assert sorted(r["refused_calls"] for r in rows) == [6, 8]
    allowed = evaluate(run_reports({"serve.py": run}), None, _settings(max_recompiles=1, max_refused_calls=8))
    assert allowed.exit_code == 0


def test_a_baseline_records_refused_calls_and_then_allows_them(tmp_path: Path):
    run = _run("eager-2.13")
    path = tmp_path / "baseline.yaml"
    save(from_runs({"serve.py": run}, Path("/home/user/project")), path)
    assert "refused_calls: 8" in path.read_text()
    base = load(path)
    assert evaluate(run_reports({"serve.py": run}), base, _settings()).exit_code == 0
    # More refused calls than the baseline recorded fail; a baseline without the key reads 0.
    more = replace(run, functions=tuple(replace(f, refusals=f.refusals * 2) for f in run.functions))
    assert [f.kind for f in evaluate(run_reports({"serve.py": more}), base, _settings()).failures] == ["refused", "refused"]
    path.write_text(path.read_text().replace("    refused_calls: 8\n", ""))
    assert [f.name for f in evaluate(run_reports({"serve.py": run}), load(path), _settings()).failures] == ["scale"]


def test_check_does_not_compare_a_run_whose_refused_calls_could_not_be_counted():
    result = evaluate(run_reports({"serve.py": _run("unsafe-2.13")}), None, _settings(max_recompiles=5))
    assert [f.kind for f in result.findings] == ["script_failed"] and result.exit_code == 3
    assert "skip_guard_eval_unsafe=True" in render_text(result)


def test_diff_counts_refused_calls_as_worse():
    plain = _run("unsafe-2.13")
    stanced = _run("eager-2.13")
    delta = {f.name: f for f in diff_runs(plain, stanced).functions}
    assert (delta["scale"].refused_before, delta["scale"].refused_after, delta["scale"].status) == (0, 8, "worse")
    back = {f.name: f for f in diff_runs(stanced, plain).functions}
    assert back["scale"].status == "improved"


def test_merge_keeps_each_records_stances_under_its_label():
    merged = merge_runs([("a", "a.json", _run("eager-2.13")), ("b", "b.json", _run("unsafe-2.13"))], jobs=True)
    a, b = Process.parse("a/main"), Process.parse("b/main")
    assert merged.stances == (StanceUse("eager_on_recompile", True, a), StanceUse("skip_guard_eval_unsafe", False, b))
    assert merged.refused_calls == 14


def test_a_parsed_log_counts_the_fail_on_recompile_errors_the_script_printed_into_it():
    run = parse_log(str(STANCES / "printed_fail-2.13.log"))
    (scale,) = run.functions
    assert (scale.name, scale.compiles, scale.refused_calls) == ("scale", 1, 2)
    (refusal,) = scale.refusals
    assert refusal.stance == "fail_on_recompile" and refusal.reasons[0].startswith("0/0: k == 2")
    assert run.stances == (StanceUse("fail_on_recompile", True),)
    # What a log cannot show is said: the errors the script did not print, and eager_on_recompile's calls.
    assert "a log shows a call fail_on_recompile refused only where the script printed its RuntimeError" in table.render(run_report(run))


def test_a_refused_calls_cause_goes_through_the_rule_a_recompiles_follows():
    """A stance refusing the call the recompile limit refused in the label-smoothing log (train and eval calls
    alternate, a new smoothing each epoch) gets the same cause the limit hit gets: the smoothing, not grad mode,
    although torch's reason against the newest entry is grad mode. The record holds torch's reasons oldest first."""
    from guarddiag.logparse.events import RecompileAnnounced
    from guarddiag.logparse.parser import LogParser
    from guarddiag.pipeline import LogReader
    from tests.conftest import LOGS

    log = LOGS / "torch-2.13.0" / "label_smoothing.log"
    refused = [e for e in LogParser().parse(log.open(encoding="utf-8")) if isinstance(e, RecompileAnnounced)][-1]
    reasons = tuple(f"{f.cache_entry}: {f.text}" for f in reversed(refused.failures))
    assert "grad_mode" in reasons[-1]
    (limit_fn,) = parse_log(str(log)).functions
    record = RefusalRecord("eager_on_recompile", limit_fn.name, limit_fn.file, limit_fn.line, len(reasons), reasons, 3)
    (f,) = LogReader(refusals=(record,)).read(log.open(encoding="utf-8")).result()[0]
    (refusal,) = f.refusals
    assert refusal.calls == 3 and refusal.cause is not None
    assert refusal.cause.source == limit_fn.limit_hits[0].cause.source == "loss_fn.keywords['label_smoothing']"


_MOVED_TORCH = """
import json, sys, types
sys.path.insert(0, sys.argv[1])
import _guarddiag_process, _guarddiag_stance
records = []
_guarddiag_process._SINKS.append(records.append)
_guarddiag_stance.install()
# A torch whose eval_frame has no _callback_from_stance (what the hook wraps) but still sets stances.
eval_frame = types.ModuleType("torch._dynamo.eval_frame")
eval_frame._set_stance = lambda stance: stance
_guarddiag_stance._patch(eval_frame)
decorators = types.ModuleType("torch._dynamo.decorators")
decorators._set_stance = eval_frame._set_stance
sys.modules["torch._dynamo.decorators"] = decorators
_guarddiag_stance._patch(eval_frame)
decorators._set_stance(types.SimpleNamespace(stance="eager_on_recompile", skip_guard_eval_unsafe=False))
decorators._set_stance(types.SimpleNamespace(stance="default", skip_guard_eval_unsafe=True))
print(json.dumps(records))
"""


def test_a_torch_whose_stance_internals_moved_says_the_stance_is_not_counted():
    """Where the function the hook wraps is gone, a refusing stance set through torch's setter (decorators
    imports it by name) is noted as not counted: the report warns and check does not compare, instead of
    reading the run as one with no refused calls. No torch here lacks it: the module stands in for one."""
    import subprocess
    import sys

    site = ROOT / "guarddiag" / "child" / "_site"
    out = subprocess.run([sys.executable, "-c", _MOVED_TORCH, str(site)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [
        {"stance": "eager_on_recompile", "counted": False},
        {"stance": "skip_guard_eval_unsafe", "counted": False},
    ]
