"""Counts on code that breaks the easy assumptions, through the installed command with real torch.

Each case is a defect of issue 11 that counted wrong before its fix: compile ids refused at the
limit, reused after torch._dynamo.reset(), compiles that install no code, torch's own count past its
64-entry buffer, processes outside the run, and a user's TORCH_LOGS that turns guarddiag's off.
The truth is torch's own: the scripts' docstrings give its counts, and ``torch_compiles`` (torch's
record read in the child) must agree with the log's count.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, in_make_test, recorded_subject, run_guarddiag

COUNTING = FIXTURES / "counting"
pytestmark = pytest.mark.torch


def _run(script: Path | str, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[dict, str]:
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", str(script), "--out", str(out), *args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text()), proc.stdout


def _by_name(record: dict) -> dict[str, dict]:
    return {f["name"] + (f"[{f['frame_ids'][0].split(':')[0]}]" if ":" in f["frame_ids"][0] else ""): f for f in record["functions"]}


def test_a_refused_compile_id_followed_by_a_compile_is_no_compile(tmp_path: Path):
    record, out = _run(COUNTING / "limit_raised.py", tmp_path)
    (pick,) = record["functions"]
    assert (pick["compiles"], record["torch_compiles"]) == (2, 2)
    (hit,) = pick["limit_hits"]
    assert hit["compile_id"].endswith("/1")
    # the refused call raised (fail_on_recompile_limit_hit); it did not switch the function to eager
    assert hit["outcome"] == "raised"
    assert "raised FailOnRecompileLimitHit" in out and "without compiling from here on" not in out
    assert hit["cause"]["category"] == "value" and "`mode`" in recorded_subject(hit["cause"])


@pytest.mark.slow
def test_ids_reused_after_reset_failed_and_skipped_compiles(tmp_path: Path):
    record, out = _run(COUNTING / "reset_and_failures.py", tmp_path)
    f = _by_name(record)
    assert {n: g["compiles"] for n, g in f.items()} == {"noop": 1, "strict": 1, "scale": 2}
    assert record["torch_compiles"] == 4 == record["totals"]["compiles"]
    assert [c["kind"] for c in f["noop"]["failed_compiles"]] == ["skipped"]
    (failed,) = f["strict"]["failed_compiles"]
    assert failed["kind"] == "error" and failed["reason"].startswith("Unsupported")
    assert f["scale"]["failed_compiles"] == []
    assert "compile 0/0 skipped" in out and f"compile {failed['compile_id']} failed: Unsupported" in out


@pytest.mark.slow
def test_torch_count_is_exact_past_its_64_entry_buffer(tmp_path: Path):
    record, _ = _run(COUNTING / "many_compiles.py", tmp_path)
    assert record["torch_compiles"] == 70 == record["totals"]["compiles"]


@pytest.mark.slow
def test_lost_log_lines_past_the_buffer_are_told(tmp_path: Path):
    """The script silences torch's logger for its last 6 compiles: only torch's own count knows them."""
    script = tmp_path / "quiet.py"
    script.write_text(textwrap.dedent(
        """
        import logging, torch, torch._dynamo
        torch._dynamo.config.automatic_dynamic_shapes = False
        torch._dynamo.config.recompile_limit = 100

        @torch.compile(backend="eager")
        def grow(x):
            return x + 1

        for n in range(1, 71):
            if n == 65:
                logging.disable(logging.CRITICAL)
            grow(torch.ones(n))
        """
    ))
    record, out = _run(script, tmp_path)
    assert record["torch_compiles"] == 70 and record["totals"]["compiles"] == 64
    assert "torch compiled 70 times in the script's process but its log shows 64" in out


@pytest.mark.slow
def test_a_fork_of_a_forked_child_gets_its_own_log(tmp_path: Path):
    script = tmp_path / "forks.py"
    script.write_text(textwrap.dedent(
        """
        import os, torch

        @torch.compile(backend="eager")
        def f(x):
            return x * 2

        @torch.compile(backend="eager")
        def g(x):
            return x - 1

        f(torch.ones(2))
        pid = os.fork()
        if pid == 0:
            f(torch.ones(3))
            grandchild = os.fork()
            if grandchild == 0:
                g(torch.ones(5))
                g(torch.ones(6))
                os._exit(0)
            os.waitpid(grandchild, 0)
            os._exit(0)
        os.waitpid(pid, 0)
        """
    ))
    record, _ = _run(script, tmp_path)
    f = _by_name(record)
    assert {n: g["compiles"] for n, g in f.items()} == {"f": 1, "f[child1]": 2, "g[child2]": 2}
    causes = [c for g in record["functions"] for e in g["recompile_events"] for c in e["causes"]]
    assert not any(c.get("reset") for c in causes)


@pytest.mark.slow
def test_a_python_child_started_with_its_own_env_is_said_to_run_unobserved(tmp_path: Path):
    script = tmp_path / "own_env.py"
    script.write_text(textwrap.dedent(
        """
        import os, subprocess, sys
        code = "import torch\\nf = torch.compile(lambda x: x + 1, backend='eager')\\nf(torch.ones(2))\\n"
        subprocess.run([sys.executable, "-c", code], env={"PATH": os.environ["PATH"]}, check=True)
        subprocess.run(["true"], env={}, check=True)  # not Python: nothing to observe
        """
    ))
    record, out = _run(script, tmp_path)
    (unobserved,) = record["unobserved"]
    argv = unobserved["argv"]
    assert os.path.basename(argv.split()[0]).startswith("python") and argv.split()[1:3] == ["-c", "import"], argv
    assert unobserved["reason"] == "no_run_mark" and unobserved["torch"] is True
    assert "ran unobserved" in out and "its compiles are not counted" in out


@pytest.mark.slow
def test_guarddiag_run_inside_a_run_counts_the_inner_script(tmp_path: Path):
    inner = tmp_path / "inner.py"
    inner.write_text(textwrap.dedent(
        """
        import torch

        @torch.compile(backend="eager")
        def f(x):
            return x + 1

        for n in (2, 3):
            f(torch.ones(n))
        """
    ))
    guarddiag = Path(sys.executable).with_name("guarddiag")
    outer = tmp_path / "outer.py"
    outer.write_text(f"import subprocess\nsubprocess.run([{str(guarddiag)!r}, 'run', 'inner.py', '--out', 'inner.json'], check=True)\n")
    _, out = _run(outer, tmp_path)
    inner_record = json.loads((tmp_path / "inner.json").read_text())
    assert inner_record["totals"]["compiles"] == 2 == inner_record["torch_compiles"]
    assert "the script ran guarddiag itself" in out


@pytest.mark.parametrize("user_logs", in_make_test(["-dynamo", "-dynamo,-guards", "+dynamo"], {"-dynamo,-guards"}))
def test_a_user_torch_logs_cannot_turn_guarddiag_channels_off(tmp_path: Path, user_logs: str):
    script = tmp_path / "named.py"
    script.write_text(textwrap.dedent(
        """
        import torch

        @torch.compile(backend="eager")
        def once(x):
            return x - 1

        @torch.compile(backend="eager")
        def twice(x, n):
            return x * n

        once(torch.ones(2))
        for n in range(3):
            twice(torch.ones(2), n)
        """
    ))
    record, _ = _run(script, tmp_path, env={**os.environ, "TORCH_LOGS": user_logs})
    assert {f["name"]: f["compiles"] for f in record["functions"]} == {"once": 1, "twice": 2}
    assert record["torch_compiles"] == 3 and record["parse"]["unidentified_frames"] == []


def test_a_run_whose_only_compile_failed_says_so(tmp_path: Path):
    """No compile left a guard listing, so the log alone cannot tell a failure; torch's ledger can."""
    script = tmp_path / "only_fail.py"
    script.write_text(textwrap.dedent(
        """
        import torch

        @torch.compile(backend="eager", fullgraph=True)
        def strict(x):
            print("side effect")
            return x + 1

        try:
            strict(torch.ones(2))
        except Exception as exc:  # noqa: BLE001
            print("compile failed:", type(exc).__name__)
        """
    ))
    record, out = _run(script, tmp_path)
    (strict,) = record["functions"]
    assert strict["compiles"] == 1 == record["torch_compiles"]
    assert [c["kind"] for c in strict["failed_compiles"]] == ["error"]
    assert "compile 0/0 failed: Unsupported" in out


@pytest.mark.slow
def test_code_objects_sharing_name_file_and_line_are_no_recompiles(tmp_path: Path):
    """A notebook cell run 8 times (exec'd source, one name, file and first line): 8 code objects, each
    compiled once, in 8 frames and 8 caches as torch itself records them. guarddiag said 7 recompiles
    ("compile cache reset"), and a budget of 0 failed; a reset still makes the next compile a recompile."""
    script = tmp_path / "cells.py"
    script.write_text(textwrap.dedent(
        """
        import torch, torch._dynamo
        from torch._dynamo.utils import get_compilation_metrics

        SOURCE = "def step(x):\\n    return x * 2 + 1\\n"
        cells = []
        for _ in range(8):
            namespace = {}
            exec(compile(SOURCE, "cell.py", "exec"), namespace)
            cells.append(torch.compile(namespace["step"], backend="eager"))
            cells[-1](torch.ones(3))
        ids = [str(m.compile_id) for m in get_compilation_metrics()]
        print("torch frames:", len({i.split("/")[0] for i in ids}), "compiles:", len(ids))
        """
    ))
    record, out = _run(script, tmp_path)
    assert "torch frames: 8 compiles: 8" in out
    (step,) = record["functions"]
    assert (step["compiles"], step["recompiles"], record["torch_compiles"]) == (8, 0, 8)
    assert step.get("code_objects") == 8
    assert step["recompile_events"] == [] and len(set(step["frame_ids"])) == 8
    assert "step (cell.py:1) [8 code objects]" in out
    # check gates this run's record as it gates a run of the script (the record holds what the run counted)
    gate = run_guarddiag("check", "run.json", "--max-recompiles", "0", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout[-2000:] + gate.stderr[-2000:]

    # After torch._dynamo.reset() a code object compiles again from scratch: that one is a recompile.
    script.write_text(script.read_text() + "torch._dynamo.reset()\ncells[1](torch.ones(3))\n")
    record, _ = _run(script, tmp_path)
    (step,) = record["functions"]
    assert (step["compiles"], step["recompiles"], record["torch_compiles"]) == (9, 1, 9)
    assert [c.get("reset") for e in step["recompile_events"] for c in e["causes"]] == [True]
