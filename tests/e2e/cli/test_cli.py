"""The installed command on what users get wrong, and on the contract of `run` and `parse`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import yaml

from guarddiag.child.runner import merge_torch_logs
from tests.conftest import LOGS, SCENARIOS, in_make_test, run_guarddiag
from tests.flag_catalog import cache_flag_catalog
from tests.scenario_runs import scenario_record

TINY = textwrap.dedent(
    """
    import sys, os
    import torch

    @torch.compile(backend="eager")
    def f(x, n):
        return x * n

    print("argv", sys.argv[1:], "name", __name__, "path0", os.path.basename(sys.path[0]))
    for n in range(3):
        f(torch.ones(2), n)
    """
)


def _one_clean_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("guarddiag:")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_missing_script(workdir):
    proc = run_guarddiag("run", "nope.py", cwd=workdir)
    assert proc.returncode == 2
    assert "no such script" in _one_clean_line(proc.stderr)


def test_directory_as_script(workdir):
    proc = run_guarddiag("run", str(workdir), cwd=workdir)
    assert proc.returncode == 2
    assert "is a directory" in _one_clean_line(proc.stderr)


@pytest.mark.torch
def test_script_runs_like_python_and_its_output_reaches_the_user(workdir):
    (workdir / "tiny.py").write_text(TINY)
    proc = run_guarddiag("run", "tiny.py", "--out", "r.json", "--", "--lr", "3", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "argv ['--lr', '3'] name __main__ path0 " + workdir.name in proc.stdout
    assert "[__guards]" not in proc.stderr and "[__guards]" not in proc.stdout
    run = json.loads((workdir / "r.json").read_text())
    assert run["argv"] == ["--lr", "3"]
    (f,) = run["functions"]
    assert (f["name"], f["line"], f["compiles"]) == ("f", 5, 2)  # n turns dynamic after one recompile
    log = workdir / run["log_path"]
    assert log.exists() and "[__guards]" in log.read_text()


@pytest.mark.torch
def test_script_that_raises_is_reported_not_hidden(workdir):
    (workdir / "boom.py").write_text(TINY + "\nraise ValueError('boom')\n")
    proc = run_guarddiag("run", "boom.py", "-o", "r.json", cwd=workdir)
    assert proc.returncode == 3
    assert "ValueError: boom" in proc.stderr  # the script's own traceback, as python shows it
    assert "_bootstrap" not in proc.stderr and "runpy" not in proc.stderr
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("guarddiag:")]
    assert len(line) == 1 and "failed (exit status 1)" in line[0]
    run = json.loads((workdir / "r.json").read_text())
    assert (run["status"], run["exit_code"], run["totals"]["compiles"]) == ("failed", 1, 2)


@pytest.mark.torch
def test_sys_exit_code_is_recorded(workdir):
    (workdir / "ex.py").write_text("import sys\nsys.exit(7)\n")
    proc = run_guarddiag("run", "ex.py", "-f", "json", cwd=workdir)
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["exit_code"] == 7


@pytest.mark.torch
def test_unknown_flag_is_refused_with_suggestions(workdir):
    (workdir / "tiny.py").write_text(TINY)
    proc = run_guarddiag("run", "tiny.py", "--flag", "automatic_dynamic_shape=false", cwd=workdir)
    assert proc.returncode == 2
    line = _one_clean_line(proc.stderr)
    assert "unknown config flag 'automatic_dynamic_shape'" in line and "automatic_dynamic_shapes" in line
    assert "argv" not in proc.stdout  # the script never started


@pytest.mark.torch
def test_ill_typed_flag_is_refused(workdir):
    cache_flag_catalog(workdir)  # reading the catalog first: test_unknown_flag_is_refused_with_suggestions
    (workdir / "tiny.py").write_text(TINY)
    proc = run_guarddiag("run", "tiny.py", "--flag", "recompile_limit=lots", cwd=workdir)
    assert proc.returncode == 2
    assert "takes an integer" in _one_clean_line(proc.stderr)


@pytest.mark.torch
def test_a_string_choice_of_a_bool_flag_is_accepted(workdir):
    # optimize_ddp: bool | Literal["ddp_optimizer", "python_reducer", ...] = True
    cache_flag_catalog(workdir)
    (workdir / "tiny.py").write_text(TINY)
    proc = run_guarddiag("run", "tiny.py", "--flag", "optimize_ddp=python_reducer", "-o", "a.json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((workdir / "a.json").read_text())["config"] == {"optimize_ddp": "python_reducer"}


def test_flag_without_value_is_refused(workdir):
    cache_flag_catalog(workdir)  # the flag catalog, read from torch once per session (tests/flag_catalog.py)
    proc = run_guarddiag("run", "x.py", "--flag", "recompile_limit", cwd=workdir)
    assert proc.returncode == 2
    assert "--flag recompile_limit: no value; give NAME=VALUE, e.g. --flag recompile_limit=VALUE" in _one_clean_line(proc.stderr)


@pytest.mark.torch
@pytest.mark.slow
def test_flag_is_applied_and_read_back(workdir):
    script = SCENARIOS / "tensor_shape.py"
    a = scenario_record("tensor_shape")  # the run without the flag, shared with tests/e2e/run/test_scenarios.py
    flipped = run_guarddiag("run", str(script), "-o", "b.json", "--flag", "automatic_dynamic_shapes=false", cwd=workdir)
    assert flipped.returncode == 0, flipped.stderr
    b = json.loads((workdir / "b.json").read_text())
    assert b["config"] == {"automatic_dynamic_shapes": False}
    assert b["totals"]["recompiles"] > a["totals"]["recompiles"]  # no dynamic shapes: one compile per size


@pytest.mark.torch
def test_timeout_stops_the_script(workdir):
    (workdir / "hang.py").write_text("import time\ntime.sleep(60)\n")
    proc = run_guarddiag("run", "hang.py", "--timeout", "5", "-f", "json", cwd=workdir, timeout=120)
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["status"] == "timeout"


@pytest.mark.torch
def test_python_m_guarddiag(workdir):
    proc = subprocess.run([sys.executable, "-m", "guarddiag", "version"], capture_output=True, text=True, cwd=workdir)
    assert proc.returncode == 0 and proc.stdout.strip()


def test_parse_formats_agree():
    log = str(LOGS / "torch-2.13.0" / "module_int_attribute.log")
    as_json = json.loads(run_guarddiag("parse", log, "-f", "json").stdout)
    as_yaml = yaml.safe_load(run_guarddiag("parse", log, "-f", "yaml").stdout)
    assert as_json == as_yaml
    assert as_json["totals"]["recompiles"] == 5
    md = run_guarddiag("parse", log, "-f", "markdown").stdout
    assert "| function" in md and "| `forward" in md
    table = run_guarddiag("parse", log).stdout
    assert "value of `self.layer_idx`" in table


def test_parse_from_stdin():
    log = (LOGS / "torch-2.13.0" / "module_int_attribute.log").read_text()
    proc = run_guarddiag("parse", "-", "-f", "json", stdin=log)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["totals"]["compiles"] == 6


@pytest.mark.parametrize("content", [b"", b"hello\nworld\n", bytes(range(256)) * 10])
def test_parse_of_a_non_log_is_one_line_and_exit_2(workdir, content):
    path = workdir / "not.log"
    path.write_bytes(content)
    proc = run_guarddiag("parse", str(path))
    assert proc.returncode == 2
    assert "no torch log lines" in _one_clean_line(proc.stderr)


def test_parse_missing_file():
    proc = run_guarddiag("parse", "/nonexistent/x.log")
    assert proc.returncode == 2
    assert "no such log file" in _one_clean_line(proc.stderr)


def test_strict_fails_on_unrecognized_lines(workdir):
    log = (LOGS / "torch-2.13.0" / "dict_value.log").read_text()
    odd = "V1130 09:16:55.668000 1968 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Something torch never said\n"
    (workdir / "odd.log").write_text(log + odd)
    assert run_guarddiag("parse", str(workdir / "odd.log")).returncode == 0
    proc = run_guarddiag("parse", str(workdir / "odd.log"), "--strict")
    assert proc.returncode == 4
    assert "not understood" in _one_clean_line(proc.stderr)


def test_unknown_format():
    proc = run_guarddiag("parse", str(LOGS / "torch-2.13.0" / "dict_value.log"), "-f", "xml")
    assert proc.returncode == 2
    assert "unknown format" in _one_clean_line(proc.stderr)


def test_torch_logs_merge_keeps_the_users_channels():
    assert merge_torch_logs(None) == "dynamo,guards,recompiles,graph_breaks"
    assert merge_torch_logs("+dynamo,inductor") == "+dynamo,inductor,guards,recompiles,graph_breaks"
    assert merge_torch_logs("recompiles_verbose, guards") == "recompiles_verbose,guards,dynamo,recompiles,graph_breaks"


def test_parse_merges_pieces_of_one_log(workdir):
    lines = (LOGS / "torch-2.13.0" / "recompile_limit.log").read_text().splitlines(keepends=True)
    (workdir / "a.log").write_text("".join(lines[:600]))
    (workdir / "b.log").write_text("".join(lines[600:]))
    whole = json.loads(run_guarddiag("parse", str(LOGS / "torch-2.13.0" / "recompile_limit.log"), "-f", "json").stdout)
    pieces = json.loads(run_guarddiag("parse", str(workdir / "a.log"), str(workdir / "b.log"), "-f", "json").stdout)
    counts = ("compiles", "recompiles", "limit_hits", "graph_breaks")
    assert pieces["totals"] == whole["totals"]
    assert {k: whole["totals"][k] for k in counts} == {"compiles": 8, "recompiles": 7, "limit_hits": 1, "graph_breaks": 0}


@pytest.mark.parametrize(
    ("args", "expect"),
    [(("run",), "nothing to run: give a script (guarddiag run train.py) or a module"), (("bogus",), "No such command 'bogus'")],
)
def test_usage_errors_are_one_line(args, expect):
    proc = run_guarddiag(*args)
    assert proc.returncode == 2
    assert expect in _one_clean_line(proc.stderr) and "Usage:" not in proc.stderr


@pytest.mark.torch
def test_debug_after_double_dash_belongs_to_the_script(workdir):
    (workdir / "a.py").write_text("import sys\nprint('argv', sys.argv[1:])\n")
    proc = run_guarddiag("run", "a.py", "--", "--debug", "--lr", "3", cwd=workdir)
    assert "argv ['--debug', '--lr', '3']" in proc.stdout


def test_directories_where_files_belong(workdir):
    for args in (("diff", str(workdir), str(workdir)), ("check", str(workdir / "x.json"), "-b", str(workdir))):
        (workdir / "x.json").write_text("{}")
        proc = run_guarddiag(*args, cwd=workdir)
        assert proc.returncode == 2, (args, proc.stderr)
        _one_clean_line(proc.stderr)


@pytest.mark.torch
@pytest.mark.parametrize("fmt", in_make_test(["table", "json", "yaml", "markdown"], {"json"}))
def test_run_in_every_format(workdir, fmt):
    from tests.documents import assert_document

    (workdir / "tiny.py").write_text(TINY)
    proc = run_guarddiag("run", "tiny.py", "-f", fmt, cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    # The script's own output comes first (it ran in the foreground); the report is the rest.
    report = proc.stdout.split("\n", 1)[1] if proc.stdout.startswith("argv") else proc.stdout
    out = assert_document(report, fmt, None if fmt in ("table", "markdown") else "guarddiag.run/2")
    if fmt in ("json", "yaml"):
        assert out["totals"]["recompiles"] == 1
    else:
        assert "f (tiny.py:5)" in out and "value of argument `n`" in out
