"""write_atomic on paths that are not plain files, and numeric settings read from files and the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guarddiag.config import load_settings
from guarddiag.errors import InputError
from guarddiag.store import write_atomic


def test_a_dangling_symlink_gets_its_target_created(tmp_path: Path):
    link = tmp_path / "latest.json"
    link.symlink_to(Path("runs") / "1.json")
    write_atomic(link, "{}\n")
    assert link.is_symlink() and (tmp_path / "runs" / "1.json").read_text() == "{}\n"


def test_a_directory_is_refused_and_left_alone(tmp_path: Path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path / "d", "{}\n")
    assert os.listdir(tmp_path / "d") == [] and os.listdir(tmp_path) == ["d"]


def test_a_pipe_behind_dev_fd_is_written_through(tmp_path: Path):
    read, write = os.pipe()
    try:
        write_atomic(Path(f"/dev/fd/{write}"), "through\n")
        assert os.read(read, 100) == b"through\n"
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize(("text", "expect"), [("max_recompiles = 3", 3), ("max_recompiles = 3.0", 3), ("max_recompiles = 0", 0)])
def test_whole_numbers_are_read(tmp_path: Path, text: str, expect: int):
    (tmp_path / "pyproject.toml").write_text(f"[tool.guarddiag]\n{text}\n")
    assert load_settings(tmp_path, {}, {}).max_recompiles == expect


@pytest.mark.parametrize("value", ["true", "1.5", "inf", "-1", "1e400"])
def test_other_numbers_are_refused(tmp_path: Path, value: str):
    (tmp_path / "pyproject.toml").write_text(f"[tool.guarddiag]\nmax_recompiles = {value}\n")
    with pytest.raises(InputError, match="'max_recompiles' must be"):
        load_settings(tmp_path, {}, {})


def test_prune_runs_keeps_the_newest_finished_folders_and_leaves_running_ones(tmp_path):
    """`.guarddiag/runs` grew without bound (51 folders, 15 MB in one afternoon)."""
    import os

    from guarddiag.child.folders import prune_runs

    runs = tmp_path / "runs"
    for i in range(6):
        folder = runs / f"2026120{i}-run"
        folder.mkdir(parents=True)
        (folder / "run.json").write_text("{}")
        os.utime(folder / "run.json", (1_000_000 + i, 1_000_000 + i))
    (runs / "running").mkdir()  # no record yet: a run in progress (or parallel runs of compare)
    (runs / "crashed").mkdir()
    os.utime(runs / "crashed", (1_000, 1_000))  # no record, days old
    removed = prune_runs(runs, keep=3, now=1_000_000 + 100)
    assert sorted(p.name for p in runs.iterdir()) == ["20261203-run", "20261204-run", "20261205-run", "running"]
    assert len(removed) == 4
    assert prune_runs(runs, keep=0) == [] and len(list(runs.iterdir())) == 4
