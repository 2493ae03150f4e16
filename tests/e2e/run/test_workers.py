"""Processes of a run that guarddiag's start-up hook does not reach, signals to guarddiag, and the
script's own excepthook (issue 24, sections 3 and 5), through the installed command with real torch.

A worker that escapes the hook compiles 4 times where nothing counts it: guarddiag samples the run's
process tree and must name it, in `run`'s report and record, and `check` must not pass it silently.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import guarddiag_cmd, process_gone, run_guarddiag

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process trees are read from /proc (Linux)"),
]

WORKER = textwrap.dedent(
    """
    import torch
    torch._dynamo.config.automatic_dynamic_shapes = False

    @torch.compile(backend="eager")
    def f(x):
        return x + 1

    for n in range(1, 5):
        f(torch.ones(n))
    """
)

# How a script starts a Python worker outside guarddiag's start-up hook, and the reason guarddiag gives.
STARTS = {
    "pythonpath": ('subprocess.run([sys.executable, "worker.py"], env={**os.environ, "PYTHONPATH": "src"}, check=True)', "pythonpath"),
    "minus-E": ('subprocess.run([sys.executable, "-E", "worker.py"], check=True)', "ignore_environment"),
    "minus-I": ('subprocess.run([sys.executable, "-I", "worker.py"], check=True)', "isolated"),
    "bash-c": (
        'subprocess.run(["bash", "-c", sys.executable + " worker.py"], env={"PATH": os.environ["PATH"]}, check=True)',
        "no_run_mark",
    ),
    "posix_spawn": (
        'env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}\n'
        'os.waitpid(os.posix_spawn(sys.executable, [sys.executable, "worker.py"], env), 0)',
        "pythonpath",
    ),
}


@pytest.mark.parametrize("kind", list(STARTS))
@pytest.mark.slow
def test_a_worker_outside_the_start_up_hook_is_named_and_check_does_not_pass_it(tmp_path: Path, kind: str):
    start, reason = STARTS[kind]
    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "s.py").write_text(f"import os, subprocess, sys\n{start}\n")
    proc = run_guarddiag("run", "s.py", "--out", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (worker,) = [u for u in json.loads((tmp_path / "run.json").read_text())["unobserved"] if "worker.py" in u["argv"]]
    assert (worker["reason"], worker["torch"]) == (reason, True), worker
    assert f"ran unobserved (pid {worker['pid']}: " in proc.stdout and "its compiles are not counted" in proc.stdout
    assert "nothing was compiled in the processes guarddiag observed" in proc.stdout
    # check does not compare a script whose counts miss a worker: a regression there would pass silently.
    # check of this run's record gates what check of the script gates (its run, built alike); one kind also
    # runs the script again under check, where its worker escapes the hook as under run.
    proc = run_guarddiag("check", "run.json" if kind != "pythonpath" else "s.py", "--max-recompiles", "0", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "ran unobserved" in proc.stdout and "not compared with the baseline" in proc.stdout



def _wait_for(path: Path, deadline: float = 120) -> str:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.slow
def test_timeout_stops_a_double_forked_daemon_that_dropped_its_environment(tmp_path: Path):
    """The daemon execs with an empty environment: no run folder in /proc/PID/environ to know it by.
    It was left running and held the pipe for its 120 s; every orphan guarddiag adopts is the run's."""
    (tmp_path / "daemon.py").write_text(textwrap.dedent(
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sh", ["sh", "-c", "echo $$ > daemon.pid; exec sleep 120"], {})
            os._exit(0)
        time.sleep(120)
        """
    ))
    started = time.monotonic()
    proc = subprocess.run([*guarddiag_cmd(), "run", "daemon.py", "--timeout", "6"], cwd=tmp_path, capture_output=True, timeout=100)
    assert proc.returncode == 3 and b"timed out" in proc.stderr
    assert time.monotonic() - started < 30  # --timeout 6, TERM's grace 5, start-up on a loaded machine; was 120
    assert process_gone(int((tmp_path / "daemon.pid").read_text()), within=15)


def test_sigkill_of_guarddiag_kills_the_script_and_what_it_started(tmp_path: Path):
    (tmp_path / "s.py").write_text(textwrap.dedent(
        """
        import os, subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import os, time; open('worker', 'w').write(str(os.getpid())); time.sleep(120)"])
        while not os.path.exists("worker"):
            time.sleep(0.1)
        time.sleep(1)  # sampled at least once
        open("pid", "w").write(str(os.getpid()))
        time.sleep(120)
        """
    ))
    proc = subprocess.Popen([*guarddiag_cmd(), "run", "s.py"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pid = int(_wait_for(tmp_path / "pid"))
        proc.kill()
        proc.wait(timeout=30)
        assert process_gone(pid, within=15), "the script outlived guarddiag"
        assert process_gone(int(_wait_for(tmp_path / "worker")), within=15), "the script's worker outlived guarddiag"
    finally:
        proc.kill()


@pytest.mark.slow
def test_sighup_is_handled_like_sigterm(tmp_path: Path):
    (tmp_path / "s.py").write_text(textwrap.dedent(
        """
        import time, torch
        torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
        open("ready", "w").write("1")
        time.sleep(120)
        """
    ))
    proc = subprocess.Popen([*guarddiag_cmd(), "run", "s.py"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "ready")
    proc.send_signal(signal.SIGHUP)  # the terminal or ssh session closed
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "was interrupted" in err
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / ".guarddiag" / "runs").glob("*/run.json")]
    assert record["status"] == "interrupted" and record["totals"]["compiles"] == 1


@pytest.mark.parametrize(
    ("ending", "python_status", "guarddiag_status"),
    [("os._exit(0)", 0, 0), ("sys.exit(4)", 4, 3), ("pass", 1, 3)],
    ids=["exits-0", "sys-exit-4", "returns"],
)
def test_the_script_excepthook_runs_as_under_python(tmp_path: Path, ending: str, python_status: int, guarddiag_status: int):
    (tmp_path / "s.py").write_text(textwrap.dedent(
        f"""
        import os, sys

        def hook(kind, value, tb):
            print("my hook:", kind.__name__, value, flush=True)
            {ending}

        sys.excepthook = hook
        raise ValueError("boom")
        """
    ))
    plain = subprocess.run([sys.executable, "s.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert plain.returncode == python_status and plain.stdout == "my hook: ValueError boom\n"
    proc = run_guarddiag("run", "s.py", "--out", "run.json", cwd=tmp_path)
    assert proc.returncode == guarddiag_status, proc.stderr
    assert proc.stdout.startswith("my hook: ValueError boom\n") and "Traceback" not in proc.stderr
    record = json.loads((tmp_path / "run.json").read_text())
    assert (record["exit_code"], record["error"]["exception"]) == (python_status, "ValueError: boom")
