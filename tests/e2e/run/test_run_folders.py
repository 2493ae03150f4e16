"""Run folders under .guarddiag/runs: pruning and `clean` remove only finished folders guarddiag made,
never a live one, a foreign one, or anything through a link; a full disk costs the run record only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import guarddiag_cmd, run_guarddiag
from tests.flag_catalog import cache_flag_catalog

# The runs of one command, and what another command would prune: two (one) finished folders kept.
KEEP_TWO = {"GUARDDIAG_KEEP_RUNS": "2"}
KEEP_ONE = {"GUARDDIAG_KEEP_RUNS": "1"}
DAYS_AGO = time.time() - 3 * 24 * 3600
# Prints a flag's value, so that flipping it changes what the script prints (compare's stdout warning).
PRINTS_FLAG = textwrap.dedent(
    """
    import torch

    @torch.compile(backend="eager")
    def f(x):
        return x + 1

    f(torch.ones(2))
    print("automatic_dynamic_shapes", torch._dynamo.config.automatic_dynamic_shapes)
    """
)


def _age(path: Path) -> None:
    """Make ``path`` and everything in it look days old (the old rule pruned by age)."""
    for p in [path, *path.rglob("*")]:
        os.utime(p, (DAYS_AGO, DAYS_AGO), follow_symlinks=False)


def _foreign(runs: Path) -> list[Path]:
    """Folders a user or another tool put under .guarddiag/runs, named and dated like run folders."""
    checkpoint = runs / "20240101-120000-train-4242"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.pt").write_bytes(b"weights")
    not_ours = runs / "20240101-120001-train-4243"
    not_ours.mkdir()
    (not_ours / "run.json").write_text('{"step": 5}')  # a run.json, but not guarddiag's record
    (not_ours / "torch.log").write_text("")
    for p in (checkpoint, not_ours):
        _age(p)
    return [checkpoint, not_ours]


@pytest.mark.torch
@pytest.mark.slow
def test_compare_with_more_runs_than_kept_keeps_its_own_folders_and_the_stdout_warning(workdir):
    """compare --repeat 11 listed folders that no longer existed and lost 'stdout differs': each run
    pruned to the newest 20 as it finished, deleting the command's own earlier folders. Two runs and one
    folder kept show it: the flagged run, pruning as it finished, deleted the baseline run's folder."""
    (workdir / "s.py").write_text(PRINTS_FLAG)
    cache_flag_catalog(workdir)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = run_guarddiag(
        "compare", "s.py", "--flag", "automatic_dynamic_shapes", "-j", "1", "--format", "json", cwd=workdir, env=KEEP_ONE,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    folders = [Path(f) for r in doc["runs"] for f in r["folders"]]
    assert len(folders) == 2 and all((f / "torch.log").is_file() and (f / "run.json").is_file() for f in folders)
    assert doc["runs"][1]["stdout_change"] is not None, "the stdout-differs warning was lost"
    # The next command prunes: the two folders are finished now, one (its own) is kept.
    (workdir / "t.py").write_text("print('hi')\n")
    assert run_guarddiag("run", "t.py", cwd=workdir, env=KEEP_ONE).returncode == 0
    assert len(list((workdir / ".guarddiag" / "runs").iterdir())) == 1


@pytest.mark.torch
@pytest.mark.slow
def test_check_of_more_scripts_than_kept_points_at_logs_that_exist(workdir):
    """check of 21+ scripts pointed at a deleted log: the failing script's folder was pruned by the later runs.
    Three scripts and two folders kept show it."""
    (workdir / "a_fails.py").write_text("import torch\nraise SystemExit(4)\n")
    for name in ("b.py", "c.py"):
        (workdir / name).write_text("import torch\nprint('ok')\n")
    proc = run_guarddiag("check", "a_fails.py", "b.py", "c.py", "--max-recompiles", "5", "-j", "1", cwd=workdir, env=KEEP_TWO)
    assert proc.returncode == 3, proc.stderr
    logs = [w.rstrip(";,)") for w in (proc.stdout + proc.stderr).split() if w.rstrip(";,)").endswith("torch.log")]
    assert logs and all(Path(p).is_file() for p in logs), logs
    assert len(list((workdir / ".guarddiag" / "runs").iterdir())) == 3


@pytest.mark.torch
@pytest.mark.slow
def test_a_live_run_older_than_a_day_is_kept_by_run_and_by_clean(workdir):
    """A run longer than a day was deleted by any other `guarddiag run` (its folder's mtime does not change
    while the log grows), and `guarddiag clean` deleted live runs too. Live is a lock its guarddiag holds."""
    release = workdir / "release"
    (workdir / "long.py").write_text(
        "import os, time, torch\n"
        "f = torch.compile(lambda x: x * 2, backend='eager')\n"
        "f(torch.ones(2))\n"
        "open('started', 'w').close()\n"
        f"while not os.path.exists({str(release)!r}):\n"
        "    time.sleep(0.1)\n"
        "f(torch.ones(3, 3))\n"
    )
    (workdir / "s.py").write_text("print('hi')\n")
    out, err = workdir / "live.out", workdir / "live.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        live = subprocess.Popen([*guarddiag_cmd(), "run", "long.py"], cwd=workdir, stdout=stdout, stderr=stderr)
    try:
        for _ in range(600):
            if (workdir / "started").exists() or live.poll() is not None:
                break
            time.sleep(0.1)
        assert (workdir / "started").exists(), err.read_text()
        (folder,) = (workdir / ".guarddiag" / "runs").iterdir()
        _age(folder)
        proc = run_guarddiag("run", "s.py", cwd=workdir, env={"GUARDDIAG_KEEP_RUNS": "1"})
        assert proc.returncode == 0, proc.stderr
        assert (folder / "torch.log").is_file(), "another run deleted the live run's folder"
        proc = run_guarddiag("clean", cwd=workdir)
        assert proc.returncode == 0, proc.stderr
        assert (folder / "torch.log").is_file(), "clean deleted the live run's folder"
        assert proc.stdout.startswith("removed 1 run folder(s)") and "1 in use by a running guarddiag" in proc.stdout
    finally:
        release.touch()  # the script ends (also when guarddiag is gone)
        live.wait(timeout=120)
    assert live.returncode == 0, err.read_text()
    assert "1 recompile" in out.read_text(), out.read_text()


@pytest.mark.torch
@pytest.mark.slow
def test_foreign_folders_and_links_under_runs_are_never_touched(workdir, tmp_path_factory):
    """Pruning deleted any folder under .guarddiag/runs without a run.json that was a day old, whether
    guarddiag made it or not. A folder without guarddiag's marker (or a legacy guarddiag record) is foreign."""
    runs = workdir / ".guarddiag" / "runs"
    foreign = _foreign(runs)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "run.json").write_text('{\n  "schema": "guarddiag.run/1"\n}\n')
    (outside / "torch.log").write_text("")
    (runs / "20240101-120002-link-1").symlink_to(outside)
    (workdir / "s.py").write_text("print('hi')\n")
    for _ in range(2):
        proc = run_guarddiag("run", "s.py", cwd=workdir, env={"GUARDDIAG_KEEP_RUNS": "1"})
        assert proc.returncode == 0, proc.stderr
        assert "guarddiag:" not in proc.stderr  # the ordinary case is quiet
        assert all(f.is_dir() for f in foreign), "a run pruned a folder guarddiag did not make"
    proc = run_guarddiag("clean", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("removed 1 run folder(s)"), proc.stdout
    assert "2 not made by guarddiag" in proc.stdout and "1 link(s)" in proc.stdout
    assert all(f.is_dir() for f in foreign) and (foreign[0] / "model.pt").read_bytes() == b"weights"
    assert sorted(p.name for p in outside.iterdir()) == ["run.json", "torch.log"]
    assert sorted(p.name for p in runs.iterdir()) == sorted([*(f.name for f in foreign), "20240101-120002-link-1"])


@pytest.mark.torch
def test_a_symlinked_runs_folder_is_not_pruned_through_and_clean_refuses_it(workdir):
    """.guarddiag/runs as a link to a checkpoint folder: pruning followed it and deleted a checkpoint."""
    checkpoints = workdir / "checkpoints"
    checkpoints.mkdir()
    legacy = checkpoints / "20240101-120000-s-1"  # shaped like an old guarddiag's finished run folder
    legacy.mkdir()
    (legacy / "run.json").write_text('{\n  "schema": "guarddiag.run/1"\n}\n')
    (legacy / "torch.log").write_text("")
    (checkpoints / "epoch-3").mkdir()
    (checkpoints / "epoch-3" / "model.pt").write_bytes(b"weights")
    _age(checkpoints)
    (workdir / ".guarddiag").mkdir()
    (workdir / ".guarddiag" / "runs").symlink_to(checkpoints)
    (workdir / "s.py").write_text("print('hi')\n")
    proc = run_guarddiag("run", "s.py", cwd=workdir, env={"GUARDDIAG_KEEP_RUNS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "is a symbolic link" in proc.stderr and "not pruned" in proc.stderr, proc.stderr
    assert legacy.is_dir() and (checkpoints / "epoch-3" / "model.pt").is_file()
    proc = run_guarddiag("clean", cwd=workdir)
    assert proc.returncode == 2
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("guarddiag:")]
    assert len(line) == 1 and "is a symbolic link" in line[0] and "Traceback" not in proc.stderr
    assert legacy.is_dir() and (checkpoints / "epoch-3" / "model.pt").is_file()
    assert len(list(checkpoints.iterdir())) == 3  # the two and the run's own folder



def test_a_fifo_named_as_a_lock_or_a_record_is_foreign_and_nothing_waits_on_it(workdir):
    """A folder whose guarddiag.lock or run.json is a FIFO (crafted, or copied with `cp -a` of a FIFO):
    pruning and `clean` opened it for reading and waited for a writer forever."""
    runs = workdir / ".guarddiag" / "runs"
    for name, fifo in (("20240101-120000-s-1", "guarddiag.lock"), ("20240101-120000-s-2", "run.json")):
        (runs / name).mkdir(parents=True)
        os.mkfifo(runs / name / fifo)
        (runs / name / "torch.log").write_text("")
    _age(runs)
    (workdir / "s.py").write_text("print('hi')\n")
    proc = run_guarddiag("run", "s.py", cwd=workdir, env={"GUARDDIAG_KEEP_RUNS": "1"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = run_guarddiag("clean", cwd=workdir, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "left 2 not made by guarddiag" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert sorted(p.name for p in runs.iterdir()) == ["20240101-120000-s-1", "20240101-120000-s-2"]

def _private_tmpfs() -> list[str] | None:
    """A command prefix that runs its command in a mount namespace where a tmpfs can be mounted
    (``unshare -m`` as root, ``unshare -rm`` in a user namespace), or None when neither is allowed."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return None
    for flags in (["-m", "--propagation", "private"], ["-r", "-m", "--propagation", "private"]):
        mounts = 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d" && umount "$d"; r=$?; rmdir "$d"; exit $r'
        probe = subprocess.run([unshare, *flags, "sh", "-c", mounts], capture_output=True)
        if probe.returncode == 0:
            return [unshare, *flags]
    return None


FILLS_THE_DISK = textwrap.dedent(
    """
    import os, torch

    @torch.compile(backend="eager")
    def f(x, n):
        return x * n

    for n in range(2):
        f(torch.ones(2), n)
    fd = os.open("filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\\0" * 65536)
    except OSError:
        pass  # the disk is full: the script's checkpoints took it all
    """
)


@pytest.mark.torch
@pytest.mark.slow
def test_a_full_disk_keeps_the_report_and_out_and_leaves_no_temp_file(workdir):
    """Disk full while writing run.json: no report, --out (on a disk with room) not written, a 0-byte
    meta.json.tmp left, and a message that blamed the script. A tmpfs of 16 MB the script fills."""
    prefix = _private_tmpfs()
    if prefix is None:
        pytest.skip("needs a mount namespace to mount a small tmpfs (unshare -m as root, or user namespaces)")
    disk = workdir / "disk"
    disk.mkdir()
    (workdir / "fill.py").write_text(FILLS_THE_DISK)
    out, files = workdir / "record.json", workdir / "files.txt"
    script = (
        'mount -t tmpfs -o size=16m tmpfs "$1" && cd "$1" && cp "$2" fill.py || exit 99\n'
        '"$3" run fill.py --out "$4"; rc=$?\n'
        'find . > "$5"; exit $rc\n'
    )
    proc = subprocess.run(
        [*prefix, "sh", "-c", script, "sh", str(disk), str(workdir / "fill.py"), guarddiag_cmd()[0], str(out), str(files)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "f" in proc.stdout and "1 recompile" in proc.stdout, proc.stdout  # the report
    assert json.loads(out.read_text())["totals"]["compiles"] == 2
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("guarddiag:")]
    assert len(line) == 1, proc.stderr
    assert "run.json" in line[0] and "ENOSPC" in line[0] and "disk is full" in line[0], line[0]
    assert "did the script" not in line[0]
    listed = files.read_text().split()
    assert not [p for p in listed if p.endswith(".tmp")], listed
