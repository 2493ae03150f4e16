"""`guarddiag baseline` and `check` through the installed command, with real torch."""

from __future__ import annotations

import json
import shutil
import textwrap

import junitparser
import pytest
import yaml

from tests.conftest import SCENARIOS, in_make_test, run_guarddiag
from tests.shared_runs import Result, guarddiag_once

pytestmark = pytest.mark.torch


@pytest.fixture
def baselined():
    """model.py and the baseline `guarddiag baseline model.py` wrote for it, made once for the session (read only)."""
    model = (SCENARIOS / "module_int_attribute.py").read_text(encoding="utf-8")
    made = guarddiag_once({"model.py": model}, "baseline", "model.py")
    assert made.returncode == 0, made.stderr
    return made.folder


@pytest.fixture
def project(workdir, baselined):
    """A project with one model script whose layer count decides its recompiles (layers - 1), and its
    baseline (a copy: each test changes the script or the baseline as it likes)."""
    for name in ("model.py", "guarddiag-baseline.yaml"):
        shutil.copy(baselined / name, workdir / name)
    return workdir


def unchanged_check(baselined) -> Result:
    """`guarddiag check model.py` on the baselined project as it is, run once per session (several tests read it)."""
    files = {name: (baselined / name).read_text(encoding="utf-8") for name in ("model.py", "guarddiag-baseline.yaml")}
    return guarddiag_once(files, "check", "model.py")


def _set_layers(project, n: int) -> None:
    path = project / "model.py"
    text = path.read_text()
    assert "for i in range(6)" in text
    path.write_text(text.replace("for i in range(6)", f"for i in range({n})"))


@pytest.mark.slow
def test_baseline_is_reviewable_yaml(project):
    doc = yaml.safe_load((project / "guarddiag-baseline.yaml").read_text())
    assert doc["schema"] == "guarddiag.baseline/1"
    (script,) = doc["scripts"]
    (forward,) = script["functions"]
    assert script["path"] == "model.py"
    assert (forward["name"], forward["file"], forward["recompiles"], forward["causes"]) == ("forward", "model.py", 5, {"value": 5})


def test_unchanged_code_passes(baselined):
    proc = unchanged_check(baselined)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK: no recompile regression" in proc.stdout


def test_more_recompiles_fail_with_the_function_and_the_cause(project):
    _set_layers(project, 8)
    proc = run_guarddiag("check", "model.py", "--junit", "junit.xml", cwd=project)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "forward (" in proc.stdout and "7 recompiles, 2 over the 5 allowed (baseline 5)" in proc.stdout
    assert "value: value of `self.layer_idx` on argument `self`" in proc.stdout
    assert "Traceback" not in proc.stderr
    suites = junitparser.JUnitXml.fromfile(str(project / "junit.xml"))
    cases = [case for suite in suites for case in suite]
    failed = [c for c in cases if not c.is_passed]
    assert [c.name for c in failed] == [f"forward ({project.name}/model.py:30)"]
    assert "2 over the 5 allowed" in failed[0].result[0].message


@pytest.mark.slow
def test_improvement_passes_and_says_how_to_record_it(project):
    _set_layers(project, 3)
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == 0
    assert "down from 5" in proc.stdout and "guarddiag check --update" in proc.stdout
    assert run_guarddiag("check", "model.py", "--update", cwd=project).returncode == 0
    doc = yaml.safe_load((project / "guarddiag-baseline.yaml").read_text())
    assert doc["scripts"][0]["functions"][0]["recompiles"] == 2


def test_a_crashed_script_is_reported_as_such_not_as_a_regression(project):
    path = project / "model.py"
    path.write_text(path.read_text() + "\nraise RuntimeError('boom')\n")
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == 3
    assert "the script failed (exit status 1)" in proc.stdout
    assert "REGRESSION" not in proc.stdout


def test_ci_outputs_step_summary_and_annotations(project):
    _set_layers(project, 8)
    summary = project / "summary.md"
    proc = run_guarddiag("check", "model.py", cwd=project, env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"})
    assert proc.returncode == 5
    md = summary.read_text()
    assert "| script" in md and "| `model.py`" in md and "REGRESSION" in md
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("::error ")]
    assert "file=model.py,line=30" in line and "2 over the 5 allowed" in line


@pytest.mark.slow
def test_config_in_pyproject_makes_check_one_command(project):
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [tool.guarddiag]
            fail_on_limit_hit = true
            scripts = [{path = "model.py", max_recompiles = 6}]
            """
        )
    )
    _set_layers(project, 7)  # 6 recompiles: over the baseline's 5 but within the configured budget of 6
    assert run_guarddiag("check", cwd=project).returncode == 0
    _set_layers_again = (project / "model.py").read_text().replace("range(7)", "range(8)")
    (project / "model.py").write_text(_set_layers_again)
    proc = run_guarddiag("check", cwd=project)
    assert proc.returncode == 5 and "over the 6 allowed" in proc.stdout
    # The environment overrides the file, the command line overrides both.
    assert run_guarddiag("check", cwd=project, env={"GUARDDIAG_MAX_RECOMPILES": "3"}).returncode == 5


@pytest.mark.slow
def test_thresholds_without_a_baseline_and_run_records(workdir):
    record = workdir / "run.json"
    assert run_guarddiag("run", str(SCENARIOS / "recompile_limit.py"), "-o", str(record), cwd=workdir).returncode == 0
    proc = run_guarddiag("check", str(record), "--fail-on-limit-hit", cwd=workdir)
    assert proc.returncode == 5
    assert "limit_hit:" in proc.stdout and "rollout" in proc.stdout
    assert run_guarddiag("check", str(record), "--max-recompiles", "100", cwd=workdir).returncode == 0
    missing = run_guarddiag("check", str(record), cwd=workdir)
    assert missing.returncode == 2 and "no baseline" in missing.stderr
    assert json.loads(record.read_text())["schema"] == "guarddiag.run/2"


def test_broken_baseline_is_one_clear_line(project):
    broken = "schema: guarddiag.baseline/1\nscripts:\n- path: model.py\n  functions:\n  - name: forward\n    recompiles: many\n"
    (project / "guarddiag-baseline.yaml").write_text(broken)
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == 2
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("guarddiag:")]
    assert "functions[0].recompiles" in line and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_log_that_lost_lines_is_not_a_pass(project):
    # A script that silences logging: torch still compiles (and regresses), its log shows nothing.
    path = project / "model.py"
    _set_layers(project, 8)
    path.write_text("import logging\nlogging.disable(logging.CRITICAL)\n" + path.read_text())
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "log lines were lost" in proc.stdout and "not compared with the baseline" in proc.stdout
    run = run_guarddiag("run", "model.py", cwd=project)
    assert run.returncode == 0 and "warning: torch compiled" in run.stdout


@pytest.mark.slow
def test_torch_logs_format_of_the_user_does_not_change_the_counts(project):
    proc = run_guarddiag("run", "model.py", "-o", "r.json", cwd=project, env={"TORCH_LOGS_FORMAT": "%(message)s"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((project / "r.json").read_text())
    assert record["totals"]["compiles"] == record["torch_compiles"] == 6


@pytest.mark.parametrize("fmt", in_make_test(["json", "yaml", "markdown"], set()))
def test_check_in_every_format_keeps_annotations_off_stdout(project, fmt):
    """The table is tested above; the other formats are one document on stdout even on a CI runner."""
    from tests.documents import assert_document

    _set_layers(project, 8)
    proc = run_guarddiag("check", "model.py", "-f", fmt, cwd=project, env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 5, proc.stdout + proc.stderr
    doc = assert_document(proc.stdout, fmt, "guarddiag.check/1")
    if fmt == "markdown":
        assert "**FAILED: 1 recompile regression(s)**" in doc and "| `model.py`" in doc
    else:
        (row,) = doc["rows"]
        assert (row["function"], row["baseline"], row["recompiles"], row["allowed"], row["status"]) == ("forward", 5, 7, 5, "REGRESSION")
        (finding,) = doc["findings"]
        assert finding["kind"] == "regression" and finding["message"].endswith("7 recompiles, 2 over the 5 allowed (baseline 5)")
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("::error ")]
    assert "file=model.py,line=30" in line
