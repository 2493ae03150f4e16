"""`check` finds its settings as pytest and ruff do and says which file it used; it says when the
baseline was recorded on another torch (issue #24, sections 4 and 7). Through the installed command."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import run_guarddiag
from tests.e2e.check import test_check

pytestmark = pytest.mark.torch
# The baselined model project of test_check (one baseline run for the session, a copy per test).
baselined, project, _set_layers = test_check.baselined, test_check.project, test_check._set_layers


def test_two_settings_files_in_one_folder_are_refused_naming_both(project):
    """guarddiag.yaml's max_recompiles: 0 was silently ignored beside [tool.guarddiag]: check passed."""
    (project / "pyproject.toml").write_text('[tool.guarddiag]\nscripts = ["model.py"]\n')
    (project / "guarddiag.yaml").write_text("max_recompiles: 0\n")
    proc = run_guarddiag("check", cwd=project)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("guarddiag: ") and "pyproject.toml [tool.guarddiag] and guarddiag.yaml" in line
    assert "keep them in one file" in line and proc.stdout == ""


@pytest.mark.slow
def test_check_from_a_subfolder_uses_the_settings_above_and_names_them(project):
    """From a subfolder no settings were found and nothing said so ('nothing to check')."""
    (project / "pyproject.toml").write_text('[tool.guarddiag]\nmax_recompiles = 0\nscripts = ["model.py"]\n')
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    summary = project / "summary.md"
    proc = run_guarddiag("check", "--junit", "j.xml", cwd=sub, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 5, proc.stdout + proc.stderr  # forward's 5 recompiles are over the file's 0
    assert "settings: ../../pyproject.toml [tool.guarddiag]" in proc.stdout
    assert "5 recompiles, 5 over the 0 allowed (baseline 5)" in proc.stdout
    assert "settings: ../../pyproject.toml [tool.guarddiag]" in summary.read_text()
    assert 'name="guarddiag.settings_file" value="' + str(project / "pyproject.toml") in (sub / "j.xml").read_text()
    report = json.loads(run_guarddiag("check", "-f", "json", cwd=sub).stdout)
    assert report["settings_file"] == str(project / "pyproject.toml")
    # A script on the command line is relative to the current folder, its key to the project root.
    proc = run_guarddiag("check", "../../model.py", "--max-recompiles", "5", cwd=sub)
    assert proc.returncode == 0 and "model.py  forward" in proc.stdout, proc.stdout + proc.stderr


def test_without_a_settings_file_check_says_none_was_found(baselined, project):
    proc = test_check.unchanged_check(baselined)  # `check model.py` there, shared with test_check
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "settings: none found" in proc.stdout
    assert json.loads(run_guarddiag("check", "model.py", "-f", "json", cwd=project).stdout)["settings_file"] is None


def _baseline_torch(project, version: str | None) -> None:
    path = project / "guarddiag-baseline.yaml"
    doc = yaml.safe_load(path.read_text())
    assert doc["torch_version"]
    if version is None:
        del doc["torch_version"]
    else:
        doc["torch_version"] = version
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.parametrize(("layers", "code"), [(8, 5), (3, 0)])
@pytest.mark.slow
def test_a_count_that_moved_against_a_baseline_of_another_torch_says_torch_changed(project, layers, code):
    _baseline_torch(project, "2.12.0")
    _set_layers(project, layers)
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == code, proc.stdout + proc.stderr
    (note,) = [ln for ln in proc.stdout.splitlines() if "torch changed" in ln]
    assert note.startswith("note: torch changed since the baseline, from 2.12.0 to 2.13"), note
    report = json.loads(run_guarddiag("check", "model.py", "-f", "json", cwd=project).stdout)
    assert report["torch"]["baseline"] == "2.12.0" and report["torch"]["now"].startswith("2.13")


@pytest.mark.slow
def test_a_baseline_that_does_not_say_its_torch_is_said_to_be_not_known(project):
    _baseline_torch(project, None)
    _set_layers(project, 8)
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == 5
    assert "note: the baseline does not say which torch recorded it (torch now: 2.13" in proc.stdout


@pytest.mark.slow
def test_the_same_torch_or_no_moved_count_says_nothing_of_torch(project):
    _set_layers(project, 8)
    proc = run_guarddiag("check", "model.py", cwd=project)  # the baseline's own torch: a regression, no note
    assert proc.returncode == 5 and "note: torch" not in proc.stdout and "which torch" not in proc.stdout
    _baseline_torch(project, "2.12.0")
    proc = run_guarddiag("check", "model.py", "--max-recompiles", "7", cwd=project)  # another torch, nothing over
    assert proc.returncode == 5 and "torch changed" in proc.stdout  # 7 > the baseline's 5: the count moved


@pytest.mark.slow
def test_another_torch_with_counts_as_recorded_says_nothing_of_torch(project):
    _baseline_torch(project, "2.12.0")
    proc = run_guarddiag("check", "model.py", cwd=project)
    assert proc.returncode == 0 and "torch changed" not in proc.stdout, proc.stdout
