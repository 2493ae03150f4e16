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


def test_prune_runs_removes_only_the_oldest_guarddiag_folders_no_one_holds(tmp_path):
    """`.guarddiag/runs` grew without bound (51 folders, 15 MB in one afternoon); pruning then removed
    folders guarddiag did not make, and live ones. A folder is live while a process holds its lock
    (flock is per open file description: the holder is another process, as a running guarddiag is)."""
    import os
    import subprocess
    import sys

    from guarddiag.child.folders import LOCK_NAME, prune_runs

    runs = tmp_path / ".guarddiag" / "runs"
    for i in range(4):  # runs whose guarddiag has ended: the lock file, no one holding it
        folder = runs / f"done-{i}"
        folder.mkdir(parents=True)
        (folder / LOCK_NAME).touch()
        (folder / "run.json").write_text("{}")
        os.utime(folder / "run.json", (1_000_000 + i, 1_000_000 + i))
    legacy = runs / "legacy"  # an older guarddiag's finished run: no lock file, its record and log
    legacy.mkdir()
    (legacy / "run.json").write_text('{\n  "schema": "guarddiag.run/1"\n}\n')
    (legacy / "torch.log").write_text("")
    os.utime(legacy / "run.json", (1_000, 1_000))
    (runs / "foreign").mkdir()  # no lock file, no record of guarddiag's: never removed
    (runs / "foreign" / "run.json").write_text('{"step": 5}')
    (runs / "foreign" / "torch.log").write_text("")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.pt").write_bytes(b"weights")
    (runs / "link").symlink_to(outside)
    (runs / "done-0" / "checkpoints").symlink_to(outside)  # removed with its folder, never followed
    for name in ("live", "own"):
        (runs / name).mkdir()
        (runs / name / LOCK_NAME).touch()
    hold = "import fcntl, sys, time\nf = open(sys.argv[1])\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(runs / "live" / LOCK_NAME)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        pruned = prune_runs(runs, keep=2, own=[runs / "own"])
    finally:
        holder.kill()
        holder.wait()
    # The command's own folder is the newest of the two kept, whatever its age.
    assert sorted(p.name for p in runs.iterdir()) == ["done-3", "foreign", "link", "live", "own"]
    assert sorted(p.name for p in pruned.removed) == ["done-0", "done-1", "done-2", "legacy"]
    assert [p.name for p in pruned.live] == ["live"] and [p.name for p in pruned.foreign] == ["foreign"]
    assert [p.name for p in pruned.links] == ["link"] and (outside / "model.pt").read_bytes() == b"weights"
    # Its holder gone, the live folder is a finished one; keep 0 removes every folder guarddiag made.
    assert sorted(p.name for p in prune_runs(runs, keep=0).removed) == ["done-3", "live", "own"]


def test_prune_runs_refuses_a_linked_runs_folder_or_dot_guarddiag(tmp_path):
    """Pruning followed `.guarddiag/runs` when it was a symbolic link, and deleted a checkpoint there."""
    from guarddiag.child.folders import LOCK_NAME, prune_runs

    target = tmp_path / "checkpoints"
    (target / "runs" / "done").mkdir(parents=True)
    (target / "runs" / "done" / LOCK_NAME).touch()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".guarddiag").symlink_to(target)
    (tmp_path / "b" / ".guarddiag").mkdir(parents=True)
    (tmp_path / "b" / ".guarddiag" / "runs").symlink_to(target / "runs")
    for runs in (tmp_path / "a" / ".guarddiag" / "runs", tmp_path / "b" / ".guarddiag" / "runs"):
        with pytest.raises(InputError, match="is a symbolic link"):
            prune_runs(runs, keep=0)
    assert (target / "runs" / "done" / LOCK_NAME).exists()
