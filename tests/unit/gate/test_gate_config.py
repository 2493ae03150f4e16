"""Settings precedence and the gate's rules, on runs built from real recorded logs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from guarddiag import baseline as baseline_io
from guarddiag.config import Settings, load_settings
from guarddiag.errors import OK, REGRESSION, SCRIPT_FAILED, InputError
from guarddiag.gate import evaluate
from guarddiag.ids import Process
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines
from guarddiag.render.gate import finding_details, finding_message, render_text
from guarddiag.report import run_reports
from tests.conftest import LOGS


def _run(log: str, status: str = "ok") -> Run:
    functions, stats = build_from_lines((LOGS / log).read_text().splitlines(), roles=lambda *_: {})
    return Run(functions=functions, parse=stats, status=status, exit_code=0 if status == "ok" else 1)


def test_precedence_defaults_file_env_cli(tmp_path: Path):
    assert load_settings(tmp_path, {}, {}).max_recompiles is None
    (tmp_path / "pyproject.toml").write_text("[tool.guarddiag]\nmax_recompiles = 4\nfail_on_limit_hit = true\n")
    s = load_settings(tmp_path, {}, {})
    assert (s.max_recompiles, s.fail_on_limit_hit, s.source) == (4, True, str(tmp_path / "pyproject.toml"))
    s = load_settings(tmp_path, {"GUARDDIAG_MAX_RECOMPILES": "2", "GUARDDIAG_FAIL_ON_LIMIT_HIT": "0"}, {})
    assert (s.max_recompiles, s.fail_on_limit_hit) == (2, False)
    s = load_settings(tmp_path, {"GUARDDIAG_MAX_RECOMPILES": "2"}, {"max_recompiles": 1, "fail_on_new_cause": None})
    assert (s.max_recompiles, s.fail_on_new_cause) == (1, False)


def test_yaml_config_and_script_tables(tmp_path: Path):
    (tmp_path / "guarddiag.yaml").write_text(
        "scripts:\n- a.py\n- path: b.py\n  args: [--n, 3]\n  flags: {automatic_dynamic_shapes: false}\n  max_recompiles: 2\n"
    )
    s = load_settings(tmp_path, {}, {})
    assert [x.path for x in s.scripts] == ["a.py", "b.py"]
    assert s.scripts[1].args == ("--n", "3") and s.scripts[1].flags == (("automatic_dynamic_shapes", "false"),)
    assert s.scripts[1].max_recompiles == 2


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[tool.guarddiag]\nmax_recompile = 1\n", "unknown setting"),
        ("[tool.guarddiag]\nmax_recompiles = 'lots'\n", "must be a int"),
        ("[tool.guarddiag]\nscripts = [{args = []}]\n", "needs a 'path'"),
        ("[tool.guarddiag\n", "not valid TOML"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, match: str):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(InputError, match=match):
        load_settings(tmp_path, {}, {})


def test_bad_env_value(tmp_path: Path):
    with pytest.raises(InputError, match="GUARDDIAG_JOBS: 'jobs' must be a int"):
        load_settings(tmp_path, {"GUARDDIAG_JOBS": "two"}, {})


def test_gate_regression_improvement_and_identity(tmp_path: Path):
    settings = Settings(root=tmp_path)
    before = _run("torch-2.4.1/fresh_module_instance.inline1.log")  # 1 compile
    after = _run("torch-2.4.1/fresh_module_instance.log")  # 12 compiles
    base = baseline_io.from_runs({"m.py": before}, tmp_path)
    result = evaluate(run_reports({"m.py": after}), base, settings)
    assert result.exit_code == REGRESSION
    (finding,) = result.failures
    assert (finding.allowed, finding.baseline, finding.function.recompiles) == (0, 0, 11)
    assert "11 recompiles, 11 over the 0 allowed (baseline 0)" in finding_message(finding)
    assert finding_details(finding) == ["11x identity: local `self`: a different object"]
    result = evaluate(run_reports({"m.py": before}), baseline_io.from_runs({"m.py": after}, tmp_path), settings)
    assert [f.kind for f in result.improvements] == ["improvement"]
    # Fewer recompiles, but inlining the module (the other log) puts 72 guards on the frame where there were 14.
    assert [(f.kind, f.guard.now, f.guard.baseline) for f in result.failures] == [("guard_count_grew", 72, 14)]


def test_gate_new_cause_limit_and_failed_script(tmp_path: Path):
    shape = _run("torch-2.13.0/tensor_shape.log")
    base = baseline_io.from_runs({"s.py": shape}, tmp_path)
    # Same numbers but the baseline recorded only one category: the other is new.
    trimmed = baseline_io.Baseline(
        tuple(
            baseline_io.BaselineScript(s.path, tuple(f.__class__(**{**f.__dict__, "causes": f.causes[:1]}) for f in s.functions))
            for s in base.scripts
        )
    )
    result = evaluate(run_reports({"s.py": shape}), trimmed, Settings(root=tmp_path, fail_on_new_cause=True))
    (new,) = result.failures
    assert result.exit_code == REGRESSION and new.kind == "new_cause"
    kept = trimmed.scripts[0].functions[0].causes[0][0]
    assert kept not in new.categories and new.categories
    # The details list only the causes of the new categories, never the one the baseline has.
    assert finding_details(new) and all(line.split(": ")[0].split(" ")[1] in new.categories for line in finding_details(new))
    assert finding_message(new).endswith(f"a cause the baseline did not have: {', '.join(new.categories)}")
    limit = _run("torch-2.13.0/recompile_limit.log")
    assert evaluate(run_reports({"r.py": limit}), None, Settings(root=tmp_path, fail_on_limit_hit=True)).exit_code == REGRESSION
    assert evaluate(run_reports({"r.py": limit}), None, Settings(root=tmp_path)).exit_code == OK
    failed = run_reports({"r.py": _run("torch-2.13.0/recompile_limit.log", "failed")})
    crashed = evaluate(failed, None, Settings(root=tmp_path, max_recompiles=0))
    assert crashed.exit_code == SCRIPT_FAILED and not any(f.kind == "regression" for f in crashed.findings)
    (failed,) = crashed.findings
    assert finding_message(failed) == "r.py: the script failed (exit status 1); not compared with the baseline"


def test_baseline_round_trip_keeps_budgets(tmp_path: Path):
    run = _run("torch-2.13.0/module_int_attribute.log")
    base = baseline_io.from_runs({"m.py": run}, tmp_path)
    path = tmp_path / "b.yaml"
    baseline_io.save(base, path)
    text = path.read_text().replace("  recompiles: 5\n", "  recompiles: 5\n    budget: 9\n")
    path.write_text(text)
    loaded = baseline_io.load(path)
    assert loaded.scripts[0].functions[0].budget == 9
    again = baseline_io.from_runs({"m.py": run}, tmp_path, previous=loaded)
    assert again.scripts[0].functions[0].budget == 9


def test_processes_are_kept_apart_and_update_keeps_other_scripts(tmp_path: Path):
    main = _run("torch-2.4.1/fresh_module_instance.inline1.log")  # forward: 1 compile
    child = _run("torch-2.4.1/fresh_module_instance.log")  # forward: 12 compiles
    from guarddiag.merge import in_process

    both = Run(functions=main.functions + tuple(in_process(f, Process.of_child(1)) for f in child.functions), parse=main.parse)
    base = baseline_io.from_runs({"m.py": both, "other.py": main}, tmp_path)
    path = tmp_path / "b.yaml"
    baseline_io.save(base, path)
    assert "process: child1\n" in path.read_text() and baseline_io.load(path) == base  # the label reads back parsed
    path.write_text(path.read_text().replace("process: child1\n", "process: worker1\n"))
    with pytest.raises(InputError, match=r"\.process: expected a process label \(rank1, child1, L/rank1\), got 'worker1'"):
        baseline_io.load(path)
    assert evaluate(run_reports({"m.py": both}), base, Settings(root=tmp_path)).exit_code == OK  # no key collision
    updated = baseline_io.from_runs({"m.py": main}, tmp_path, previous=base)
    assert [s.path for s in updated.scripts] == ["other.py", "m.py"]


def test_a_new_limit_hit_fails_against_the_baseline(tmp_path: Path):
    limit = _run("torch-2.13.0/recompile_limit.log")
    base = baseline_io.from_runs({"r.py": limit}, tmp_path)
    no_hits = baseline_io.Baseline(
        tuple(
            baseline_io.BaselineScript(s.path, tuple(f.__class__(**{**f.__dict__, "limit_hits": 0}) for f in s.functions))
            for s in base.scripts
        )
    )
    result = evaluate(run_reports({"r.py": limit}), no_hits, Settings(root=tmp_path))
    assert result.exit_code == REGRESSION and result.failures[0].kind == "limit_hit"
    assert evaluate(run_reports({"r.py": limit}), base, Settings(root=tmp_path)).exit_code == OK


def test_a_configured_script_named_on_the_command_line_keeps_its_settings(tmp_path: Path):
    from guarddiag.commands.baseline import _specs, run_key

    (tmp_path / "guarddiag.yaml").write_text("scripts:\n- path: bench.py\n  args: [--steps, '20']\n  max_recompiles: 3\n")
    settings = load_settings(tmp_path, {}, {})
    (spec,) = _specs(["bench.py"], settings, (("specialize_float", "true"),))
    assert (spec.args, spec.max_recompiles) == (("--steps", "20"), 3)
    assert spec.flags == (("specialize_float", "true"),)
    assert run_key(str(tmp_path / "bench.py"), spec.args, tmp_path) == "bench.py --steps 20"


def test_a_second_function_of_the_same_name_and_file_is_new_not_the_baseline_one(tmp_path: Path):
    """Two `forward`s in one file (two module classes): the one the baseline knows matches exactly, so the
    other cannot take its entry as "moved": it is new, held to the default budget of 0."""
    settings = Settings(root=tmp_path)
    run = _run("torch-2.13.0/module_int_attribute.log")  # forward: 5 recompiles
    (forward,) = run.functions
    base = baseline_io.from_runs({"m.py": replace(run, functions=(replace(forward, recompile_events=(), compiles=1),))}, tmp_path)
    other = replace(forward, line=forward.line + 40)
    moved = replace(run, functions=(replace(forward, recompile_events=(), compiles=1), other))
    result = evaluate(run_reports({"m.py": moved}), base, settings)
    assert result.exit_code == REGRESSION
    (finding,) = result.failures
    assert finding.line == forward.line + 40 and "5 recompiles, 5 over the 0 allowed (not in the baseline)" in finding_message(finding)
    assert [r.status for r in result.rows] == ["REGRESSION", "ok"]


def test_a_function_that_moved_still_matches_its_entry(tmp_path: Path):
    settings = Settings(root=tmp_path)
    run = _run("torch-2.13.0/module_int_attribute.log")
    (forward,) = run.functions
    base = baseline_io.from_runs({"m.py": run}, tmp_path)
    moved = replace(run, functions=(replace(forward, line=forward.line + 3),))
    result = evaluate(run_reports({"m.py": moved}), base, settings)
    assert result.exit_code == OK and [r.before for r in result.rows] == [5]


def test_a_new_function_that_hits_the_limit_fails_by_default(tmp_path: Path):
    """Past the limit the function runs without compiling: a regression even within its recompile budget."""
    settings = Settings(root=tmp_path)
    limited = _run("torch-2.13.0/recompile_limit.log")
    (f,) = limited.functions
    assert f.limit_hit
    empty = baseline_io.from_runs({"r.py": replace(limited, functions=())}, tmp_path)
    result = evaluate(run_reports({"r.py": limited}), empty, settings, budgets={"r.py": 100})
    assert result.exit_code == REGRESSION
    assert [x.kind for x in result.failures] == ["limit_hit"]
    assert "runs it without compiling from here on" in finding_message(result.failures[0])
    (row,) = result.rows
    assert (row.limit_hits_before, row.limit_hits, row.status) == (None, 1, "REGRESSION")
    assert " -> 1" in render_text(result) and "limit hits" in render_text(result)
    # the same run against a baseline that recorded the hit passes
    recorded = baseline_io.from_runs({"r.py": limited}, tmp_path)
    assert evaluate(run_reports({"r.py": limited}), recorded, settings).exit_code == OK


def test_junit_is_valid_xml_when_a_function_name_has_control_characters(tmp_path: Path):
    """A frame name or reason from a log can hold any character; XML 1.0 cannot hold C0 controls even escaped."""
    import xml.etree.ElementTree as ET

    from guarddiag.render.gate import render_junit

    run = _run("torch-2.13.0/module_int_attribute.log")
    (forward,) = run.functions
    odd = replace(run, functions=(replace(forward, name="for\x01ward\x1b[0m\x7f", file=forward.file + "\x00"),))
    result = evaluate(run_reports({"m\x02.py": odd}), None, Settings(root=tmp_path, max_recompiles=0))
    text = render_junit(result)
    root = ET.fromstring(text.encode())  # raises on invalid XML
    names = [case.get("name") for case in root.iter("testcase")]
    assert any(n.startswith("for\\x01ward\\x1b[0m\\x7f (") for n in names), names
    assert any(f.get("message", "").startswith("for\\x01ward") for f in root.iter("failure"))
