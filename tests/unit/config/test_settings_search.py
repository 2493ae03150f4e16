"""Where `check` and `baseline` find their settings: upward from the current folder to the repository's top,
as pytest and ruff do (issue #24, section 4: from a subfolder nothing was found and nothing said so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guarddiag.commands.baseline import _specs
from guarddiag.config import DEFAULT_BASELINE, find_settings_file, load_settings
from guarddiag.errors import InputError


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    sub = root / "pkg" / "tests"
    sub.mkdir(parents=True)
    return root, sub


def test_the_first_folder_upward_with_settings_is_the_root(tmp_path: Path):
    root, sub = _project(tmp_path)
    (root / "guarddiag.yaml").write_text("max_recompiles: 2\nscripts: [bench/a.py]\nbaseline: ci/base.yaml\n")
    (root / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")  # no [tool.guarddiag]: passed over
    settings = load_settings(sub, {}, {})
    assert (settings.source, settings.root, settings.max_recompiles) == (str(root / "guarddiag.yaml"), root, 2)
    # Paths in the file are relative to its folder.
    assert settings.root / settings.baseline == root / "ci" / "base.yaml"
    (spec,) = _specs([], settings, ())
    assert settings.root / spec.path == root / "bench" / "a.py"


def test_a_nearer_pyproject_table_wins_over_a_file_further_up(tmp_path: Path):
    root, sub = _project(tmp_path)
    (root / "guarddiag.yaml").write_text("max_recompiles: 2\n")
    (root / "pkg" / "pyproject.toml").write_text("[tool.guarddiag]\nmax_recompiles = 7\n")
    settings = load_settings(sub, {}, {})
    assert (settings.source, settings.max_recompiles) == (str(root / "pkg" / "pyproject.toml"), 7)
    assert settings.root / settings.baseline == root / "pkg" / DEFAULT_BASELINE


def test_the_search_stops_at_the_repository_top(tmp_path: Path):
    root, sub = _project(tmp_path)
    (tmp_path / "guarddiag.yaml").write_text("max_recompiles: 0\n")  # above the repository: another project's
    assert find_settings_file(sub) is None
    settings = load_settings(sub, {}, {})
    assert (settings.source, settings.root, settings.max_recompiles) == ("", sub, None)
    (root / ".git").rmdir()
    (root / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git is a file: still the top
    assert find_settings_file(sub) is None


@pytest.mark.parametrize("where", ["root", "sub"])
def test_both_files_in_one_folder_are_refused(tmp_path: Path, where: str):
    root, sub = _project(tmp_path)
    folder = root if where == "root" else sub
    (folder / "pyproject.toml").write_text("[tool.guarddiag]\nmax_recompiles = 5\n")
    (folder / "guarddiag.yaml").write_text("max_recompiles: 0\n")
    with pytest.raises(InputError, match=rf"^{folder}: both pyproject.toml \[tool.guarddiag\] and guarddiag.yaml .*delete the other$"):
        load_settings(sub, {}, {})


def test_the_command_line_and_environment_are_relative_to_the_current_folder(tmp_path: Path):
    root, sub = _project(tmp_path)
    (root / "pyproject.toml").write_text("[tool.guarddiag]\nscripts = [{path = 'pkg/tests/t.py', max_recompiles = 1}]\n")
    settings = load_settings(sub, {"GUARDDIAG_BASELINE": "env.yaml"}, {})
    assert settings.root / settings.baseline == sub / "env.yaml"
    settings = load_settings(sub, {"GUARDDIAG_BASELINE": "env.yaml"}, {"baseline": "cli.yaml"})
    assert settings.root / settings.baseline == sub / "cli.yaml"
    # t.py on the command line in pkg/tests is the configured pkg/tests/t.py: it keeps its budget.
    (spec,) = _specs(["t.py"], settings, ())
    assert (spec.path, spec.max_recompiles) == ("pkg/tests/t.py", 1)
    (other,) = _specs(["u.py"], settings, ())
    assert Path(other.path) == sub / "u.py"
