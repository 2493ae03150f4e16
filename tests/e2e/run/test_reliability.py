"""docs/reliability.md, row by row: what users' scripts, logs and files do to guarddiag.

Every case: one line on stderr starting `guarddiag:`, the documented exit code, no traceback
of guarddiag's own, and nothing the user had lost.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import LOGS, SCENARIOS, guarddiag_cmd, process_gone, run_guarddiag
from tests.flag_catalog import cache_flag_catalog
from tests.shared_runs import Result, guarddiag_once

COMPILE = textwrap.dedent(
    """
    import torch

    @torch.compile(backend="eager")
    def f(x, n):
        return x * n

    for n in range(2):
        f(torch.ones(2), n)
    """
)


def _line(stderr: str) -> str:
    ours = [ln for ln in stderr.splitlines() if ln.startswith("guarddiag:")]
    assert len(ours) == 1, stderr
    assert "Traceback" not in stderr or "File \"" in stderr.split("Traceback")[1].splitlines()[1]  # only the script's own
    return ours[0]


def _record(workdir):
    (path,) = list((workdir / ".guarddiag" / "runs").glob("*/run.json"))
    return json.loads(path.read_text())


def _run_once(script: str) -> Result:
    """``guarddiag run s.py`` of ``script``, made once per session: tests that check different things about
    the same run of the same script read one (tests/shared_runs.py)."""
    return guarddiag_once({"s.py": script}, "run", "s.py")


@pytest.mark.torch
@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ("def f(:\n", "failed", 1),  # syntax error
        ("\x00\x01binary", "failed", 1),  # not Python
        # make test-slow: an exit status of the script's own (tests/e2e/cli/test_cli.py's sys.exit is in make test).
        pytest.param("raise SystemExit(4)\n", "failed", 4, marks=pytest.mark.slow),
        pytest.param("import os\nos._exit(6)\n", "failed", 6, marks=pytest.mark.slow),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "killed", -9),
    ],
    ids=["syntax-error", "not-python", "sys-exit", "os-exit", "killed"],
)
def test_script_failures_are_recorded_and_reported(body, status, code):
    proc = _run_once(COMPILE + "\n" + body if status != "failed" or code != 1 else body)
    assert proc.returncode == 3
    assert f"the script {'was killed' if status == 'killed' else status} (exit status {code})" in _line(proc.stderr)
    run = _record(proc.folder)
    assert (run["status"], run["exit_code"]) == (status, code)
    assert os.path.exists(proc.folder / run["log_path"])
    # An uncaught exception is kept in the record; exits and signals have none.
    assert run["error"] == ({"exception": run["error"]["exception"], "flags": []} if code == 1 else None)
    if code == 1:
        assert run["error"]["exception"].startswith(("SyntaxError:", "ValueError:"))


@pytest.mark.torch
@pytest.mark.slow
def test_flag_value_outside_its_literal_choices_is_refused_before_running(workdir):
    # torch 2.13 would accept the string when set and raise only at the first dynamic recompile.
    proc = run_guarddiag("run", str(SCENARIOS / "tensor_shape.py"), "--flag", "automatic_dynamic_shapes_mark_as=bogus", cwd=workdir)
    assert proc.returncode == 2
    line = _line(proc.stderr)
    assert "flag 'automatic_dynamic_shapes_mark_as' takes one of 'dynamic', 'unbacked', not 'bogus'" in line
    assert "nothing was run" in line
    assert not list((workdir / ".guarddiag" / "runs").glob("*"))  # no empty run folder left behind


@pytest.mark.torch
def test_deprecated_flag_under_warnings_as_errors_is_a_flag_error_not_a_script_failure(workdir):
    # CI jobs often run with -W error; torch 2.13 warns (FutureWarning) when a deprecated flag is touched.
    env = {"PYTHONWARNINGS": "error"}
    proc = run_guarddiag(
        "run", str(SCENARIOS / "tensor_shape.py"), "--flag", "inline_inbuilt_nn_modules=false", cwd=workdir, env=env
    )
    assert proc.returncode == 2
    line = _line(proc.stderr)
    assert "Traceback" not in proc.stderr
    assert line.startswith("guarddiag: torch refused to read --flag inline_inbuilt_nn_modules: FutureWarning: ")
    assert "is deprecated" in line and line.endswith("; fix or drop the --flag; nothing was run")


@pytest.mark.torch
@pytest.mark.slow
def test_deprecated_no_op_flag_is_run_and_said_in_guarddiags_words(workdir):
    proc = run_guarddiag("run", str(SCENARIOS / "tensor_shape.py"), "--flag", "inline_inbuilt_nn_modules=false", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "_bootstrap.py" not in proc.stderr and "FutureWarning" not in proc.stderr  # no warning pointing into guarddiag
    note = "note: --flag inline_inbuilt_nn_modules: torch._dynamo.config.inline_inbuilt_nn_modules is deprecated and does not do anything"
    assert note in proc.stdout
    assert _record(workdir)["flag_notes"][0].startswith(note[len("note: ") :])


@pytest.mark.torch
def test_flag_value_torch_refuses_at_run_time_is_named(workdir):
    # debug_backend_override is a free-form string; torch validates it at the first compile and raises
    # a ValueError that names its environment variable and the bad backend, not the flag.
    proc = run_guarddiag("run", str(SCENARIOS / "tensor_shape.py"), "--flag", "debug_backend_override=0:nosuch", cwd=workdir)
    assert proc.returncode == 3
    line = _line(proc.stderr)
    assert line.startswith(
        f"guarddiag: {SCENARIOS / 'tensor_shape.py'}: the script failed on --flag debug_backend_override=0:nosuch "
        "(ValueError: TORCH_COMPILE_OVERRIDE_BACKENDS: 'nosuch' is not a valid backend"
    ), line
    assert "its error names that flag; fix or drop it; the report covers what ran before that, the torch log is in" in line
    run = _record(workdir)
    assert run["status"] == "failed"
    assert run["error"]["flags"] == ["debug_backend_override=0:nosuch"]
    assert os.path.exists(workdir / run["log_path"])


@pytest.mark.torch
@pytest.mark.slow
def test_compare_does_not_credit_a_flag_whose_run_torch_refused(workdir):
    cache_flag_catalog(workdir)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = run_guarddiag(
        "compare", str(SCENARIOS / "tensor_shape.py"), "--flag", "debug_backend_override=0:nosuch", "-f", "json", cwd=workdir
    )
    assert proc.returncode == 3
    assert "the script failed on --flag debug_backend_override=0:nosuch (ValueError: " in _line(proc.stderr)
    (diff,) = json.loads(proc.stdout)["diffs"]
    assert diff["incomplete"] and diff["incomplete"][0].startswith("debug_backend_override=0:nosuch: the script failed on --flag")
    assert all(v.startswith("no change is attributed:") for v in diff["verdict"]), diff["verdict"]


@pytest.mark.torch
def test_script_that_compiles_then_crashes_keeps_its_counts():
    proc = _run_once(COMPILE + "\nraise SystemExit(4)\n")  # the run of test_script_failures_...[sys-exit]
    assert proc.returncode == 3
    assert _record(proc.folder)["totals"]["compiles"] == 2


@pytest.mark.torch
@pytest.mark.slow
def test_megabytes_of_output_stdin_and_chdir(workdir):
    (workdir / "s.py").write_text(
        "import os, sys\n"
        "data = sys.stdin.read()\n"
        "os.chdir('/')\n"
        + COMPILE
        + "\nsys.stdout.write('x' * 3_000_000)\nsys.stderr.write('y' * 3_000_000)\nprint('got', data.strip())\n"
    )
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir, stdin="hello from stdin\n")
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.count("x") >= 3_000_000 and proc.stderr.count("y") >= 3_000_000
    assert "got hello from stdin" in proc.stdout
    assert json.loads((workdir / "r.json").read_text())["totals"]["compiles"] == 2


@pytest.mark.torch
@pytest.mark.slow
def test_script_changing_torch_logging_itself(workdir):
    (workdir / "s.py").write_text("import logging, torch\ntorch._logging.set_logs(dynamo=logging.DEBUG, guards=False)\n" + COMPILE)
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 0
    assert "[__guards]" not in proc.stderr
    assert json.loads((workdir / "r.json").read_text())["totals"]["compiles"] == 2


@pytest.mark.torch
@pytest.mark.slow
def test_threads_compiling_concurrently_match_torch(workdir):
    (workdir / "s.py").write_text(
        textwrap.dedent(
            """
            import threading, torch

            @torch.compile(backend="eager")
            def a(x, n):
                return x + n

            @torch.compile(backend="eager")
            def b(x, n):
                return x - n

            def work(fn):
                for n in range(3):
                    fn(torch.ones(3), n)

            threads = [threading.Thread(target=work, args=(fn,)) for fn in (a, b)]
            [t.start() for t in threads]
            [t.join() for t in threads]
            """
        )
    )
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    run = json.loads((workdir / "r.json").read_text())
    from tests.conftest import torch_truth

    truth = torch_truth(workdir / "s.py", workdir)
    assert {(f["name"], f["line"]): f["compiles"] for f in run["functions"]} == truth
    assert run["parse"]["unrecognized"] == 0


@pytest.mark.torch
@pytest.mark.slow
def test_dataloader_workers(workdir):
    (workdir / "s.py").write_text(
        COMPILE
        + textwrap.dedent(
            """
            from torch.utils.data import DataLoader, TensorDataset
            for (batch,) in DataLoader(TensorDataset(torch.ones(8, 2)), batch_size=4, num_workers=2):
                f(batch, 1)
            """
        )
    )
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((workdir / "r.json").read_text())["totals"]["compiles"] >= 2


@pytest.mark.torch
@pytest.mark.slow
def test_processes_the_script_spawns_are_logged_and_counted_apart(workdir):
    (workdir / "s.py").write_text(
        textwrap.dedent(
            """
            import torch
            import torch.multiprocessing as mp

            @torch.compile(backend="eager")
            def step(x, n):
                return x * n

            def worker(rank):
                for n in range(3):
                    step(torch.ones(2), n)

            if __name__ == "__main__":
                step(torch.ones(2), 1)
                procs = [mp.get_context("spawn").Process(target=worker, args=(r,)) for r in range(2)]
                [p.start() for p in procs]
                [p.join() for p in procs]
            """
        )
    )
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[__guards]" not in proc.stderr  # the workers' torch logs went to their own files
    run = json.loads((workdir / "r.json").read_text())
    counts = sorted((f["frame_ids"][0].partition(":")[0] if ":" in f["frame_ids"][0] else "main", f["compiles"]) for f in run["functions"])
    # in each worker n=0, 1, 2: the int turns dynamic after one recompile, as in the main process of test_cli
    assert counts == [("child1", 2), ("child2", 2), ("main", 1)]
    assert len(list((workdir / ".guarddiag" / "runs").glob("*/torch.child-*.log"))) == 2


@pytest.mark.torch
@pytest.mark.slow
def test_forked_children_log_apart_from_the_parent(workdir):
    (workdir / "s.py").write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp
            import torch
            import torch._dynamo.utils as utils

            @torch.compile(backend="eager", dynamic=False)
            def f(x):
                return x * 2 + 1

            def torch_count(path):
                ids = {str(m.compile_id) for m in utils.get_compilation_metrics() if m.co_name == "f"}
                with open(path, "w") as fh:
                    fh.write(str(len(ids)))

            def child(n):
                f(torch.ones(n))  # a recompile in the forked child
                torch_count("child-count.txt")

            if __name__ == "__main__":
                mp.set_start_method("fork")
                f(torch.ones(3))
                p = mp.Process(target=child, args=(5,))
                p.start()
                p.join()
                f(torch.ones(7))  # a recompile in the parent: the same compile id [0/1] as the child's
                torch_count("parent-count.txt")
            """
        )
    )
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads((workdir / "r.json").read_text())
    events = sorted((f["frame_ids"][0], [e["compile_id"] for e in f["recompile_events"]]) for f in run["functions"])
    assert events == [("0", ["0/1"]), ("child1:0", ["child1:0/1"])]
    # Each process counts what torch's own metrics count in that process: the child's cache holds the
    # compile it inherited at fork (0/0) and its own recompile (0/1).
    compiles = {f["frame_ids"][0]: f["compiles"] for f in run["functions"]}
    assert compiles == {"0": int((workdir / "parent-count.txt").read_text()), "child1:0": int((workdir / "child-count.txt").read_text())}
    assert compiles == {"0": 2, "child1:0": 2}


def _start(workdir, script: str) -> subprocess.Popen:
    (workdir / "s.py").write_text(script)
    return subprocess.Popen(
        [*guarddiag_cmd(), "run", "s.py"], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_log(workdir, text: str, deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        logs = list((workdir / ".guarddiag" / "runs").glob("*/torch.log")) if (workdir / ".guarddiag").exists() else []
        if logs and text in logs[0].read_text(errors="replace"):
            return
        time.sleep(0.3)
    raise AssertionError(f"{text!r} never appeared in the torch log")


@pytest.mark.torch
def test_ctrl_c_stops_the_child_and_keeps_a_partial_record(workdir):
    proc = _start(workdir, COMPILE + "\nimport time\nprint('compiled', flush=True)\ntime.sleep(120)\n")
    _wait_for_log(workdir, "GUARDS:")
    time.sleep(1)
    proc.send_signal(signal.SIGINT)  # only guarddiag: the child must be stopped by guarddiag
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in _line(err)
    run = _record(workdir)
    assert run["status"] == "interrupted" and run["totals"]["compiles"] >= 1


GRANDCHILD = textwrap.dedent(
    """
    import multiprocessing as mp, os, time

    def worker():
        with open("worker.pid", "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(120)

    if __name__ == "__main__":
        mp.get_context("spawn").Process(target=worker).start()  # not a daemon: exit would wait for it
        while not os.path.exists("worker.pid"):
            time.sleep(0.1)
        time.sleep(120)
    """
)



def _wait_for_file(path, deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while not path.exists() and time.monotonic() < end:
        time.sleep(0.2)
    assert path.exists(), f"{path} never appeared"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process trees are read from /proc")
@pytest.mark.slow
def test_ctrl_c_also_stops_the_processes_the_script_started(workdir):
    proc = _start(workdir, GRANDCHILD)
    _wait_for_file(workdir / "worker.pid")
    proc.send_signal(signal.SIGINT)  # only guarddiag, as a CI runner's cancel does
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert process_gone(int((workdir / "worker.pid").read_text()))


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process trees are read from /proc")
@pytest.mark.slow
def test_timeout_also_stops_the_processes_the_script_started(workdir):
    (workdir / "s.py").write_text(GRANDCHILD)
    proc = run_guarddiag("run", "s.py", "--timeout", "8", cwd=workdir, timeout=120)
    assert proc.returncode == 3 and "timed out" in _line(proc.stderr)
    assert process_gone(int((workdir / "worker.pid").read_text()))


@pytest.mark.torch
@pytest.mark.slow
def test_second_ctrl_c_exits_at_once(workdir):
    proc = _start(
        workdir, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nopen('ready', 'w').close()\ntime.sleep(120)\n"
    )
    end = time.monotonic() + 60
    while not (workdir / "ready").exists() and time.monotonic() < end:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    time.sleep(1)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 5
    assert proc.returncode == 130
    assert "interrupted twice" in _line(err)


def test_missing_interpreter(workdir):
    (workdir / "s.py").write_text("print(1)\n")
    proc = run_guarddiag("run", "s.py", "--python", "/no/such/python", cwd=workdir)
    assert proc.returncode == 2 and "no such interpreter" in _line(proc.stderr)


def test_interpreter_without_torch(workdir, tmp_path_factory):
    bare = tmp_path_factory.mktemp("bare")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    (workdir / "s.py").write_text("print(1)\n")
    proc = run_guarddiag("run", "s.py", "--python", str(bare / "bin" / "python"), cwd=workdir)
    assert proc.returncode == 2
    line = _line(proc.stderr)
    assert "cannot import torch" in line and "nothing was run" in line
    assert "print" not in proc.stdout


def test_run_folder_not_writable(workdir):
    (workdir / ".guarddiag").write_text("a file where the run folder should be")
    (workdir / "s.py").write_text("print(1)\n")
    proc = run_guarddiag("run", "s.py", cwd=workdir)
    assert proc.returncode == 2 and "cannot create the run folder" in _line(proc.stderr)


def test_disk_full_keeps_the_previous_record(workdir):
    out = workdir / "r.json"
    log = LOGS / "torch-2.13.0" / "recompile_limit.log"
    assert run_guarddiag("parse", str(log), "-o", str(out)).returncode == 0
    before = out.read_bytes()

    def small_files():  # writing more than 4 KB fails with EFBIG, as a full disk would
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run(
        [*guarddiag_cmd(), "parse", str(log), "-o", str(out)], capture_output=True, text=True, preexec_fn=small_files
    )
    assert proc.returncode == 2
    line = _line(proc.stderr)
    assert "cannot write the run record (EFBIG: File too large, the file is larger than the file size limit); raise the limit" in line
    assert out.read_bytes() == before
    assert [p.name for p in workdir.iterdir()] == ["r.json"]  # no temp file left behind


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"", "no torch log lines"),
        (b"127.0.0.1 - - [30/Nov/2026] \"GET / HTTP/1.1\" 200 612\n" * 50, "no torch log lines"),
    ],
    ids=["empty", "another-tool"],
)
def test_logs_that_are_not_torch_logs(workdir, content, expect):
    (workdir / "x.log").write_bytes(content)
    proc = run_guarddiag("parse", str(workdir / "x.log"))
    assert proc.returncode == 2 and expect in _line(proc.stderr)


def test_latin1_crlf_and_huge_lines_in_a_real_log(workdir):
    text = (LOGS / "torch-2.13.0" / "dict_value.log").read_text()
    mangled = text.replace("\n", "\r\n").encode() + b"\xe9\xff not utf-8 \xfe\r\n" + b"z" * 1_000_000 + b"\r\n"
    (workdir / "x.log").write_bytes(mangled)
    proc = run_guarddiag("parse", str(workdir / "x.log"), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    whole = json.loads(run_guarddiag("parse", str(LOGS / "torch-2.13.0" / "dict_value.log"), "-f", "json").stdout)
    assert json.loads(proc.stdout)["totals"] == whole["totals"]


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        ("{not json", "not valid JSON"),
        ('{"schema": "guarddiag.run/99", "functions": []}', "is not one this guarddiag reads"),
        ('{"schema": "guarddiag.run/1", "functions": [{"name": 3}]}', "not a valid guarddiag run record"),
        ('{"schema": "guarddiag.run/1", "functions": [], "error": "boom"}', "not a valid guarddiag run record"),
    ],
    ids=["corrupt", "newer-schema", "wrong-types", "error-not-an-object"],
)
def test_bad_run_records(workdir, content, expect):
    (workdir / "a.json").write_text(content)
    good = workdir / "b.json"
    assert run_guarddiag("parse", str(LOGS / "torch-2.13.0" / "dict_value.log"), "-o", str(good)).returncode == 0
    proc = run_guarddiag("diff", str(workdir / "a.json"), str(good))
    assert proc.returncode == 2 and expect in _line(proc.stderr)


def test_internal_errors_are_one_line_unless_debug(workdir):
    # A run record whose schema is right but whose numbers are absurd reaches code that cannot cope.
    shutil.copy(LOGS / "torch-2.13.0" / "dict_value.log", workdir / "x.log")
    proc = run_guarddiag("parse", str(workdir / "x.log"), "--debug")
    assert proc.returncode == 0  # --debug is accepted anywhere and changes nothing on success


@pytest.mark.torch
@pytest.mark.slow
def test_scenario_runs_with_a_read_only_script(workdir):
    script = workdir / "ro.py"
    shutil.copy(SCENARIOS / "no_recompile.py", script)
    script.chmod(0o444)
    assert run_guarddiag("run", str(script), cwd=workdir).returncode == 0


@pytest.mark.torch
@pytest.mark.slow
def test_torch_dynamo_reset_starts_new_frames_that_are_still_counted(workdir):
    (workdir / "s.py").write_text(
        textwrap.dedent(
            """
            import torch

            def f(x):
                return x * 2

            def g(x):
                return x - 1

            cf = torch.compile(f, backend="eager", dynamic=False)
            for n in (2, 3, 4):
                cf(torch.ones(n))
            torch._dynamo.reset()  # compile ids start again at [0/0]
            cg = torch.compile(g, backend="eager", dynamic=False)
            cf = torch.compile(f, backend="eager", dynamic=False)
            for n in (2, 3):
                cg(torch.ones(n))
                cf(torch.ones(n))
            """
        )
    )
    proc = run_guarddiag("run", "s.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    run = json.loads((workdir / "r.json").read_text())
    by_name = {f["name"]: f for f in run["functions"]}
    assert (by_name["f"]["compiles"], by_name["g"]["compiles"]) == (5, 2)
    assert len(by_name["f"]["recompile_events"]) == by_name["f"]["recompiles"] == 4
    assert by_name["f"]["recompile_events"][2]["causes"][0].get("reset") is True


# --- found by a hostile-tester pass (2026-11-30) ---------------------------------------------------

SLOW = COMPILE + "\nimport time\nopen('ready', 'w').close()\ntime.sleep(120)\n"


@pytest.mark.torch
@pytest.mark.slow
def test_ctrl_c_in_compare_stops_every_run_and_keeps_their_partial_records(workdir):
    (workdir / "s.py").write_text(SLOW)
    cache_flag_catalog(workdir)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = subprocess.Popen(
        [*guarddiag_cmd(), "compare", "s.py", "--flag", "automatic_dynamic_shapes"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    end = time.monotonic() + 120
    while len(list(workdir.glob(".guarddiag/runs/*/torch.log"))) < 2 or not (workdir / "ready").exists():
        assert time.monotonic() < end, "the runs never started"
        time.sleep(0.3)
    time.sleep(2)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)  # only guarddiag: its runs wait in other threads
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 30  # not the scripts' 120 s
    assert proc.returncode == 130, err
    assert "interrupted" in _line(err)
    records = [json.loads(p.read_text()) for p in (workdir / ".guarddiag" / "runs").glob("*/run.json")]
    assert len(records) == 2 and {r["status"] for r in records} == {"interrupted"}


@pytest.mark.torch
@pytest.mark.slow
def test_sigterm_is_handled_like_ctrl_c(workdir):
    proc = _start(workdir, SLOW)
    _wait_for_file(workdir / "ready")
    proc.send_signal(signal.SIGTERM)  # how a CI runner cancels a job
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "was interrupted" in _line(err)
    assert _record(workdir)["status"] == "interrupted"


@pytest.mark.parametrize(
    ("args", "env", "expect"),
    [
        (["--python", "/bin/echo"], {}, "without starting guarddiag's bootstrap"),
        (["--python", "/tmp"], {}, "is a directory, not an interpreter"),
        (["--timeout", "0"], {}, "not a number of seconds above 0"),
        (["--timeout", "nan"], {}, "not a number of seconds above 0"),
        ([], {"TORCH_LOGS": "invalid_name"}, "importing torch failed in"),
    ],
    ids=["echo-as-python", "directory-as-python", "timeout-0", "timeout-nan", "invalid-TORCH_LOGS"],
)
def test_runs_that_cannot_start_are_one_line(workdir, args, env, expect):
    (workdir / "s.py").write_text(COMPILE)
    proc = run_guarddiag("run", "s.py", *args, cwd=workdir, env=env)
    assert proc.returncode == 2, proc.stderr
    assert expect in _line(proc.stderr) and "Traceback" not in proc.stderr


def test_a_broken_link_as_run_folder_is_refused_not_looped_on(workdir):
    (workdir / "s.py").write_text("print(1)\n")
    (workdir / ".guarddiag").symlink_to(workdir / "nonexistent")
    proc = run_guarddiag("run", "s.py", cwd=workdir, timeout=30)
    assert proc.returncode == 2 and "is not a folder, or is a broken link" in _line(proc.stderr)


@pytest.mark.torch
@pytest.mark.slow
def test_a_symlinked_script_imports_its_neighbours_as_python_does(workdir):
    (workdir / "real").mkdir()
    (workdir / "real" / "helper.py").write_text("VALUE = 3\n")
    (workdir / "real" / "main.py").write_text("import helper\n" + COMPILE)
    (workdir / "link").mkdir()
    (workdir / "link" / "main.py").symlink_to(workdir / "real" / "main.py")
    proc = run_guarddiag("run", "link/main.py", cwd=workdir)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.torch
@pytest.mark.slow
def test_strict_does_not_hide_a_failed_script(workdir):
    (workdir / "s.py").write_text(COMPILE + "\nraise SystemExit(7)\n")
    proc = run_guarddiag("run", "s.py", "--strict", cwd=workdir)
    assert proc.returncode == 3 and "the script failed (exit status 7)" in _line(proc.stderr)


@pytest.mark.torch
@pytest.mark.parametrize(
    ("given", "expect"),
    [
        ("allow_unspec_int_on_nn_modul", "did you mean: allow_unspec_int_on_nn_module?"),
        ("allow_unspec_int_on_nn_module", "no value; give NAME=VALUE, e.g. --flag allow_unspec_int_on_nn_module=true"),
    ],
    ids=["misspelt", "known"],
)
def test_a_flag_without_a_value_names_the_flag_meant(workdir, given, expect):
    cache_flag_catalog(workdir)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    (workdir / "s.py").write_text("print('never runs')\n")
    proc = run_guarddiag("run", "s.py", "--flag", given, cwd=workdir)
    assert proc.returncode == 2 and expect in _line(proc.stderr)
    assert "never runs" not in proc.stdout


CHECKPOINT = textwrap.dedent(
    """
    import time
    try:
        print("ready", flush=True)  # inside the try: a Ctrl-C right after it still reaches the handler
        time.sleep(120)
    except KeyboardInterrupt:
        time.sleep(0.5)  # saving a checkpoint: a second SIGINT here would cut it short
        with open("saved", "w") as fh:
            fh.write("ok")
        raise
    """
)


@pytest.mark.torch
def test_one_ctrl_c_at_a_terminal_reaches_the_script_once(workdir):
    """At a terminal, Ctrl-C signals the whole foreground process group: the script got it already, and
    guarddiag must not send it a second one that interrupts its own cleanup (python script.py does not)."""
    import pty

    (workdir / "ckpt.py").write_text(CHECKPOINT)
    pid, master = pty.fork()
    if pid == 0:  # the child: a session of its own, the pty its controlling terminal, in the foreground
        os.chdir(workdir)
        os.execv(guarddiag_cmd()[0], [guarddiag_cmd()[0], "run", "ckpt.py"])
    output = b""
    try:
        end = time.monotonic() + 120
        while b"ready" not in output and time.monotonic() < end:
            output += os.read(master, 4096)
        assert b"ready" in output, output
        os.write(master, b"\x03")  # Ctrl-C, as typed
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    assert os.waitstatus_to_exitcode(status) == 130, output
    assert (workdir / "saved").read_text() == "ok", output.decode(errors="replace")[-2000:]


DAEMON = textwrap.dedent(
    """
    import os, sys, time
    if os.fork() == 0:  # the classic double fork: setsid, fork again, the middle process exits
        os.setsid()
        if os.fork() == 0:
            with open("daemon.pid", "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(120)  # holds the inherited stdout open
            os._exit(0)
        os._exit(0)
    time.sleep(120)
    """
)


@pytest.mark.torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is a Linux feature")
@pytest.mark.slow
def test_timeout_stops_a_double_forked_daemon_that_holds_the_pipe(workdir):
    """`guarddiag run x --timeout 5 | cat` took 130 s: the daemon left the process tree (its parent exited)
    and kept the pipe open. guarddiag is a child subreaper: the orphan is re-parented to it and stopped."""
    (workdir / "daemon.py").write_text(DAEMON)
    started = time.monotonic()
    proc = subprocess.run([*guarddiag_cmd(), "run", "daemon.py", "--timeout", "8"], cwd=workdir, capture_output=True, timeout=100)
    assert proc.returncode == 3 and "timed out" in _line(proc.stderr.decode())
    assert time.monotonic() - started < 60
    assert process_gone(int((workdir / "daemon.pid").read_text()))


@pytest.mark.torch
def test_run_folders_are_pruned_to_the_newest_and_clean_removes_them(workdir):
    runs = workdir / ".guarddiag" / "runs"
    for i in range(4):  # finished folders of a guarddiag from before the lock file: its record and log
        (runs / f"old-{i}").mkdir(parents=True)
        (runs / f"old-{i}" / "run.json").write_text('{\n  "schema": "guarddiag.run/1"\n}\n')
        (runs / f"old-{i}" / "torch.log").write_text("")
        os.utime(runs / f"old-{i}" / "run.json", (1_000_000 + i, 1_000_000 + i))
    (workdir / "s.py").write_text("print('hi')\n")
    proc = run_guarddiag("run", "s.py", cwd=workdir, env={"GUARDDIAG_KEEP_RUNS": "2"})
    assert proc.returncode == 0, proc.stderr
    kept = sorted(p.name for p in runs.iterdir())
    assert len(kept) == 2 and "old-3" in kept and not any(n.startswith("old-") and n != "old-3" for n in kept)
    proc = run_guarddiag("run", "s.py", cwd=workdir, env={"GUARDDIAG_KEEP_RUNS": "two"})
    assert proc.returncode == 2 and "GUARDDIAG_KEEP_RUNS='two': not a whole number" in _line(proc.stderr)
    proc = run_guarddiag("clean", cwd=workdir)
    assert proc.returncode == 0 and proc.stdout.startswith("removed 2 run folder(s)")
    assert list(runs.iterdir()) == []


@pytest.mark.torch
@pytest.mark.parametrize("removes", ["os.environ['GUARDDIAG_CHILD_LOG_DIR']", "'.guarddiag'"], ids=["run-folder", "dot-guarddiag"])
@pytest.mark.slow
def test_a_script_that_removes_its_run_folder_is_still_counted(workdir, removes):
    """The script ran fine: it gets no bootstrap traceback and no "exited without starting" error; guarddiag
    re-creates the folder from the log it held open, and says what it could not know."""
    (workdir / "rm.py").write_text(COMPILE + f"\nimport os, shutil\nshutil.rmtree({removes})\nprint('cleaned up')\n")
    proc = run_guarddiag("run", "rm.py", "--out", "rec.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "cleaned up" in proc.stdout
    assert "the script removed its run folder" in proc.stdout
    record = json.loads((workdir / "rec.json").read_text())
    assert record["totals"]["compiles"] == 2 and record["torch_compiles"] == 2 and record["folder_recreated"] is True
    assert Path(record["log_path"]).is_file()


@pytest.mark.torch
@pytest.mark.slow
def test_explain_of_a_script_that_fails_or_hangs_exits_as_run_does(workdir):
    (workdir / "fails.py").write_text(COMPILE + "\nraise SystemExit(4)\n")
    proc = run_guarddiag("explain", "fails.py", cwd=workdir)
    assert proc.returncode == 3 and "the script failed (exit status 4)" in _line(proc.stderr)
    assert proc.stdout.startswith("guard model of 1 compiled function")  # the model of what compiled comes first
    (workdir / "hangs.py").write_text(COMPILE + "\nimport time\ntime.sleep(120)\n")
    started = time.monotonic()
    proc = run_guarddiag("explain", "hangs.py", "--timeout", "8", cwd=workdir)
    assert proc.returncode == 3 and "the script timed out" in _line(proc.stderr)  # whether it compiled by then or not
    assert time.monotonic() - started < 60


def test_a_python_that_hangs_at_start_up_is_given_up_on_within_compare_timeout(workdir):
    """flags/compare waited 60 s for the probe, then 300 s for the catalog; --timeout did not shorten it."""
    hang = workdir / "python-hang"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    (workdir / "s.py").write_text("print('never runs')\n")
    started = time.monotonic()
    proc = run_guarddiag("compare", "s.py", "--flag", "specialize_float", "--python", str(hang), "--timeout", "5", cwd=workdir)
    assert proc.returncode == 2 and "did not start within 5s" in _line(proc.stderr)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("blocker", ["file", "long-name"])
def test_run_folder_problems_name_their_cause(workdir, blocker):
    """`.guarddiag` a plain file, or a 240-character script name, said "run from a writable folder"."""
    if blocker == "file":
        (workdir / ".guarddiag").write_text("not a folder")
        script = workdir / "s.py"
    else:
        script = workdir / ("s" * 240 + ".py")
    script.write_text("print('ran')\n")
    proc = run_guarddiag("run", script.name, cwd=workdir)
    if blocker == "file":
        assert proc.returncode == 2
        assert "cannot create the run folder (it exists and is not a folder, or is a broken link)" in _line(proc.stderr)
    else:
        assert proc.returncode == 0, proc.stderr
        assert "ran" in proc.stdout


def test_an_interrupted_parse_does_not_speak_of_run_folders(workdir):
    big = workdir / "big.log"
    text = (LOGS / "torch-2.13.0" / "module_int_attribute.log").read_text()
    with big.open("w") as fh:
        for _ in range(400):
            fh.write(text)
    proc = subprocess.Popen([*guarddiag_cmd(), "parse", str(big)], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(0.8)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("parse finished before the signal")
    assert proc.returncode == 130 and _line(err) == "guarddiag: interrupted"


@pytest.mark.torch
@pytest.mark.slow
def test_a_run_that_compiled_nothing_does_not_ask_about_torch_logs(workdir):
    (workdir / "s.py").write_text("import torch\nprint('no compile')\n")
    proc = run_guarddiag("run", "s.py", cwd=workdir)
    assert proc.returncode == 0 and "TORCH_LOGS" not in proc.stdout
    assert "note: torch logged nothing: nothing was compiled" in proc.stdout


@pytest.mark.torch
def test_a_wrong_flag_is_refused_at_once_when_the_catalog_is_cached(workdir):
    """A refused flag value took 5-6 s (the child imports torch to refuse it); with the flag catalog cached by
    `guarddiag flags` or `compare`, guarddiag refuses it before starting anything."""
    cache_flag_catalog(workdir)  # as `guarddiag flags recompile` run here caches it (made once per session)
    (workdir / "s.py").write_text("print('never runs')\n")
    started = time.monotonic()
    proc = run_guarddiag("run", "s.py", "--flag", "recompile_limit=lots", cwd=workdir)
    elapsed = time.monotonic() - started
    assert proc.returncode == 2
    assert _line(proc.stderr) == "guarddiag: flag 'recompile_limit' takes an integer, not 'lots'; fix or drop the --flag; nothing was run"
    assert not (workdir / ".guarddiag" / "runs").exists() and elapsed < 3, elapsed
