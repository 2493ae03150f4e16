"""docs/reliability.md, the files guarddiag writes and reads: output paths that are not plain files,
hand-edited run records, hostile baselines and configs, and CI outputs that cannot be written.

Every case: one line on stderr starting `guarddiag:`, the documented exit code, no traceback,
and nothing the user had lost.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import LOGS, SCENARIOS, guarddiag_cmd, run_guarddiag

LOG = LOGS / "torch-2.13.0" / "dict_value.log"  # one function, 3 compiles


def _line(stderr: str) -> str:
    ours = [ln for ln in stderr.splitlines() if ln.startswith("guarddiag:")]
    assert len(ours) == 1, stderr
    assert "Traceback" not in stderr, stderr
    return ours[0]


def _record(workdir: Path, name: str = "good.json") -> Path:
    path = workdir / name
    proc = run_guarddiag("parse", str(LOG), "-o", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


# --- --out, --junit, baselines: the path given may be a symlink, a device or a FIFO -------------


def test_out_through_a_symlink_writes_its_target_and_keeps_the_link(workdir):
    (workdir / "records").mkdir()
    target = workdir / "records" / "run.json"
    target.write_text("old\n")
    link = workdir / "latest.json"
    link.symlink_to(Path("records") / "run.json")
    proc = run_guarddiag("parse", str(LOG), "--out", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == os.path.join("records", "run.json")
    assert json.loads(target.read_text())["schema"] == "guarddiag.run/2"
    assert sorted(p.name for p in (workdir / "records").iterdir()) == ["run.json"]  # no temp file left


def test_out_to_a_fifo_writes_into_it_instead_of_replacing_it(workdir):
    fifo = workdir / "records.fifo"
    os.mkfifo(fifo)
    # The reader is a process so that it can be stopped when guarddiag (wrongly) never opens the FIFO.
    reader = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(fifo)!r}).read())"], stdout=subprocess.PIPE, text=True
    )
    try:
        proc = run_guarddiag("parse", str(LOG), "--out", str(fifo), timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
        received, _ = reader.communicate(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert json.loads(received)["totals"]["compiles"] == 3


def test_out_to_dev_full_is_a_full_disk_not_a_success(workdir):
    if not os.path.exists("/dev/full") or not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        pytest.skip("no /dev/full here")
    # Only once a FIFO is known to be written through, never replaced: a guarddiag that replaced
    # its --out target would replace /dev/full itself (and can, when the tests run as root).
    fifo = workdir / "probe.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}).read()"])
    try:
        probe = run_guarddiag("parse", str(LOG), "--out", str(fifo), timeout=60)
        assert probe.returncode == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode), "guarddiag replaces non-regular files"
        reader.wait(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    proc = run_guarddiag("parse", str(LOG), "--out", "/dev/full")
    assert proc.returncode == 2
    assert "/dev/full: cannot write the run record (ENOSPC: No space left on device, the disk is full)" in _line(proc.stderr)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(workdir):
    def with_umask(mask):
        return lambda: os.umask(mask)

    new = workdir / "new.json"
    proc = subprocess.run(
        [*guarddiag_cmd(), "parse", str(LOG), "-o", str(new)],
        capture_output=True, text=True, preexec_fn=with_umask(0o022),
    )
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    committed = workdir / "committed.json"
    committed.write_text("{}")
    committed.chmod(0o664)
    proc = subprocess.run(
        [*guarddiag_cmd(), "parse", str(LOG), "-o", str(committed)],
        capture_output=True, text=True, preexec_fn=with_umask(0o077),
    )
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(committed.stat().st_mode) == 0o664
    assert json.loads(committed.read_text())["schema"] == "guarddiag.run/2"


def test_an_updated_baseline_keeps_its_mode(workdir):
    record = _record(workdir)
    assert run_guarddiag("baseline", str(record), cwd=workdir).returncode == 0
    baseline = workdir / "guarddiag-baseline.yaml"
    baseline.chmod(0o640)
    proc = run_guarddiag("check", str(record), "--update", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(baseline.stat().st_mode) == 0o640


# --- run records edited by hand ---------------------------------------------------------------


def _edit(record: dict, change: str) -> str:
    f = record["functions"][0]
    if change == "file-null":
        f["file"] = None
    elif change == "name-number":
        f["name"] = 5
    elif change == "parse-list":
        record["parse"] = []
    elif change == "log-path-number":
        record["log_path"] = 5
    elif change == "compiles-huge":
        f["compiles"] = "HUGE"
        return json.dumps(record).replace('"HUGE"', "1e400")  # JSON reads it as float infinity
    elif change == "frame-ids-numbers":
        f["frame_ids"] = [0]
    elif change == "cause-text-null":
        f["recompile_events"][0]["causes"][0]["text"] = None
    elif change == "nested-100k":
        return json.dumps(record)[:-1] + ', "config": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    return json.dumps(record)


@pytest.mark.parametrize(
    "change",
    ["file-null", "name-number", "parse-list", "log-path-number", "compiles-huge", "frame-ids-numbers", "cause-text-null"],
)
@pytest.mark.parametrize("command", ["diff", "explain", "check"])
def test_hand_edited_run_records_are_refused_by_every_command(workdir, change, command):
    good = _record(workdir)
    bad = workdir / "bad.json"
    bad.write_text(_edit(json.loads(good.read_text()), change))
    args = {"diff": ["diff", str(bad), str(good)], "explain": ["explain", str(bad)], "check": ["check", str(bad), "--max-recompiles", "9"]}
    proc = run_guarddiag(*args[command], cwd=workdir)
    assert proc.returncode == 2, proc.stderr
    assert f"{bad}: not a valid guarddiag run record (" in _line(proc.stderr)


def test_a_run_record_nested_100k_deep_is_refused(workdir):
    good = _record(workdir)
    deep_config = _edit(json.loads(good.read_text()), "nested-100k")
    for name, text in [("deep.json", "[" * 100_000 + "]" * 100_000), ("deep-config.json", deep_config)]:
        (workdir / name).write_text(text)
        proc = run_guarddiag("diff", str(workdir / name), str(good))
        assert proc.returncode == 2
        assert "not a valid guarddiag run record (nested too deeply)" in _line(proc.stderr)


# --- baselines and configs ----------------------------------------------------------------------


def _billion_laughs() -> str:
    lines = ["schema: guarddiag.baseline/1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    lines += ["scripts:", "- path: good.json", "  functions:", "  - name: f", "    file: *a9"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (_billion_laughs(), "line 2: YAML anchors and aliases (&, *) are not allowed in a baseline"),
        ("schema: guarddiag.baseline/1\nscripts: " + "[" * 20_000 + "]" * 20_000 + "\n", "not a guarddiag baseline (nested too deeply)"),
        (b"schema: guarddiag.baseline/1\nscripts: [] # caf\xe9\n", "not UTF-8 text"),
        ("schema: guarddiag.baseline/1\nscripts:\n- path: x\n  functions:\n  - {name: f, compiles: " + "9" * 5000 + "}\n",
         "not a guarddiag baseline (Exceeds the limit"),
        ("schema: guarddiag.baseline/9\nscripts: []\n", "is not one this guarddiag reads (guarddiag.baseline/1); upgrade guarddiag"),
    ],
    ids=["billion-laughs", "nested-20k", "not-utf8", "5000-digits", "newer-schema"],
)
def test_hostile_baselines_are_one_line(workdir, content, expect):
    _record(workdir)
    path = workdir / "guarddiag-baseline.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    proc = run_guarddiag("check", "good.json", cwd=workdir, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert expect in _line(proc.stderr)


def test_baselines_guarddiag_writes_have_no_anchors(workdir):
    _record(workdir, "a.json")
    _record(workdir, "b.json")
    proc = run_guarddiag("baseline", "a.json", "b.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    text = (workdir / "guarddiag-baseline.yaml").read_text()
    assert "&" not in text and "*id" not in text
    assert run_guarddiag("check", "a.json", "b.json", cwd=workdir).returncode == 0


@pytest.mark.parametrize(
    ("file", "content", "env", "expect"),
    [
        ("guarddiag.yaml", b"max_recompiles: 3  # caf\xe9\n", {}, "guarddiag.yaml: not UTF-8 text"),
        ("pyproject.toml", "[tool.guarddiag]\nscripts = " + "[" * 5000 + "]" * 5000 + "\n", {}, "(nested too deeply)"),
        ("pyproject.toml", "[tool.guarddiag]\nmax_recompiles = 1.5e400\n", {}, "'max_recompiles' must be a int, not inf"),
        ("pyproject.toml", "[tool.guarddiag]\nmax_recompiles = 1.5\n", {}, "'max_recompiles' must be a int, not 1.5"),
        ("pyproject.toml", "[tool.guarddiag]\nmax_recompiles = -3\n", {}, "'max_recompiles' must be 0 or more, not -3"),
        ("pyproject.toml", "[tool.guarddiag]\njobs = 0\n", {}, "'jobs' must be 1 or more, not 0"),
        (None, None, {"GUARDDIAG_MAX_RECOMPILES": "-1"}, "GUARDDIAG_MAX_RECOMPILES: 'max_recompiles' must be 0 or more, not '-1'"),
        (None, None, {"GUARDDIAG_TIMEOUT": "nan"}, "GUARDDIAG_TIMEOUT: 'timeout' must be a float, not 'nan'"),
        ("guarddiag.yaml", "timeout: -5\n", {}, "'timeout' must be a number of seconds above 0, not -5"),
        # 1 KB of nested aliases: a 39 MB "one line" error or 3 GB and 139 s before they were refused
        ("guarddiag.yaml", _billion_laughs().replace("schema: guarddiag.baseline/1\n", ""), {},
         "line 1: YAML anchors and aliases (&, *) are not allowed in a settings file"),
    ],
    ids=["yaml-not-utf8", "toml-nested-5000", "toml-1.5e400", "toml-fraction", "toml-negative", "toml-jobs-0", "env-negative",
         "env-nan", "yaml-negative-timeout", "yaml-billion-laughs"],
)
def test_bad_settings_are_one_line(workdir, file, content, env, expect):
    _record(workdir)
    if file:
        (workdir / file).write_bytes(content if isinstance(content, bytes) else content.encode())
    proc = run_guarddiag("check", "good.json", "--max-recompiles", "9", cwd=workdir, env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert expect in _line(proc.stderr) and len(proc.stderr) < 2000


def test_a_negative_budget_is_refused_from_the_environment_as_from_the_command_line(workdir):
    _record(workdir)
    cli = run_guarddiag("check", "good.json", "--max-recompiles", "-1", cwd=workdir)
    env = run_guarddiag("check", "good.json", cwd=workdir, env={"GUARDDIAG_MAX_RECOMPILES": "-1"})
    assert cli.returncode == env.returncode == 2
    assert "-1" in _line(cli.stderr) and "-1" in _line(env.stderr)


# --- check: outputs that cannot be written do not hide the verdict ---------------------------


@pytest.mark.parametrize("output", ["step-summary", "junit"])
@pytest.mark.parametrize("threshold", ["0", "9"], ids=["regression", "pass"])
def test_an_output_that_cannot_be_written_keeps_the_verdict(workdir, output, threshold):
    record = _record(workdir)  # 2 recompiles: over a threshold of 0, within 9
    (workdir / "not-a-dir").write_text("")
    unwritable = str(workdir / "not-a-dir" / "out")  # its parent is a file: no one can create it, root neither
    extra, env = (["--junit", unwritable], {}) if output == "junit" else ([], {"GITHUB_STEP_SUMMARY": unwritable})
    proc = run_guarddiag("check", str(record), "--max-recompiles", threshold, *extra, cwd=workdir, env=env)
    assert proc.returncode == (5 if threshold == "0" else 0), proc.stderr
    assert ("FAILED: 1 recompile regression(s)" if threshold == "0" else "OK: no recompile regression") in proc.stdout
    what = "--junit {}: cannot write the JUnit XML" if output == "junit" else "$GITHUB_STEP_SUMMARY {}: cannot append the summary"
    assert f"warning: {what.format(unwritable)} (Not a directory)" in _line(proc.stderr)


def test_a_failed_run_record_in_check_is_exit_3_with_one_line(workdir):
    record = _record(workdir)
    data = json.loads(record.read_text())
    data.update(status="failed", exit_code=1)
    record.write_text(json.dumps(data))
    proc = run_guarddiag("check", str(record), "--max-recompiles", "9", cwd=workdir)
    assert proc.returncode == 3
    assert "the script failed (exit status 1)" in proc.stdout
    line = _line(proc.stderr)
    assert "the script failed (exit status 1)" in line and "fix the script" in line


@pytest.mark.torch
@pytest.mark.slow
def test_a_crashed_script_in_check_is_exit_3_with_one_line(workdir):
    shutil.copy(SCENARIOS / "module_int_attribute.py", workdir / "model.py")
    assert run_guarddiag("baseline", "model.py", cwd=workdir).returncode == 0
    path = workdir / "model.py"
    path.write_text(path.read_text() + textwrap.dedent("\nraise RuntimeError('boom')\n"))
    proc = run_guarddiag("check", "model.py", cwd=workdir)
    assert proc.returncode == 3
    assert "model.py: the script failed (exit status 1)" in _line(proc.stderr)


@pytest.mark.parametrize(
    "content", ["schema: guarddiag.baseline/9\nscripts: []\n", "scripts: [: oops\n"], ids=["newer-schema", "not-yaml"]
)
def test_an_unreadable_baseline_is_replaced_by_baseline_and_refused_by_update(workdir, content):
    """`guarddiag baseline -o` writes it anew (the advice every baseline error gives); `check --update`, which
    keeps budgets from the old file, refuses and names that way out."""
    _record(workdir)
    path = workdir / "guarddiag-baseline.yaml"
    path.write_text(content)
    proc = run_guarddiag("check", "good.json", "--update", cwd=workdir)
    assert proc.returncode == 2 and "write it anew from these runs with `guarddiag baseline -o" in _line(proc.stderr)
    assert path.read_text() == content
    proc = run_guarddiag("baseline", "good.json", "-o", str(path), cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "writing it anew from these runs" in _line(proc.stderr)
    assert run_guarddiag("check", "good.json", cwd=workdir).returncode == 0


# --- logs and records that name devices and FIFOs ------------------------------------------------


def test_a_log_naming_a_device_or_fifo_as_source_file_is_parsed_without_reading_it(workdir):
    """Source lines are read from the files a log names (argument or local?): a device or a FIFO there
    made `parse` hang or eat all memory. Only regular files are read."""
    fifo = workdir / "pipe.py"
    os.mkfifo(fifo)
    text = (LOGS / "torch-2.13.0" / "module_int_attribute.log").read_text()
    for target in ("/dev/zero", str(fifo)):
        log = workdir / "odd.log"
        log.write_text(text.replace("/home/user/project/scenarios/module_int_attribute.py", target))
        proc = run_guarddiag("parse", str(log), cwd=workdir, timeout=30)
        assert proc.returncode == 0, proc.stderr
        assert "6 compiles, 5 recompiles" in proc.stdout


def test_a_record_naming_a_fifo_as_its_log_is_refused_by_explain(workdir):
    fifo = workdir / "torch.log"
    os.mkfifo(fifo)
    record = _record(workdir)
    data = json.loads(record.read_text())
    data["log_path"] = str(fifo)
    record.write_text(json.dumps(data))
    proc = run_guarddiag("explain", str(record), cwd=workdir, timeout=30)
    assert proc.returncode == 2
    assert "is not a regular file; explain the log or the script instead" in _line(proc.stderr)
