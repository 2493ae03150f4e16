"""Hostile run records through the installed ``guarddiag``: what reaches a terminal, a CI log and the
step summary, byte for byte (the escaping itself: tests/unit/render/test_escape.py).

The record is made as an attacker makes one: a real recorded log parsed with ``--out``, hostile strings
written into its JSON (another job's artifact), read by ``parse``-made records' readers: ``diff``,
``check``, ``baseline``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import LOGS, guarddiag_cmd
from tests.unit.render.test_escape import _assert_markdown, _assert_plain, _poison, _raw_controls

LIMIT = LOGS / "torch-2.13.0" / "recompile_limit.log"
HOSTILE = "\x1b]52;c;SGVsbG8=\x07\x1b]0;owned\x07\x1b[2J\u202eevil\r\n::stop-commands::x\n::add-mask::s ##[error]boom a`b|c<img src=x>[l](https://e)"
ANNOTATION = re.compile(r"::(error|notice) file=[^:,\r\n]*(,line=\d+)?,title=guarddiag [a-z_]+::[^\r\n]*")


def _guarddiag(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run guarddiag; its stdout and stderr as the bytes it wrote (decoded strictly: they must be UTF-8)."""
    proc = subprocess.run([*guarddiag_cmd(), *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def _records(tmp: Path) -> tuple[Path, Path]:
    """A real record, and the same record after an attacker edited its names (read back: valid)."""
    plain = tmp / "plain.json"
    assert _guarddiag("parse", str(LIMIT), "--out", str(plain), cwd=tmp)[0] == 0
    data = json.loads(plain.read_text(encoding="utf-8"))
    _poison(HOSTILE)(data)
    hostile = tmp / "hostile.json"
    hostile.write_text(json.dumps(data), encoding="utf-8")
    return plain, hostile


def _assert_ci_log(text: str, annotations: int = 0) -> None:
    """A stream the runner reads: no raw control, and no workflow command but guarddiag's own ``annotations``
    (one per finding, each on one line)."""
    assert not _raw_controls(text), _raw_controls(text)
    commands = [line for line in text.split("\n") if line.lstrip().startswith("::")]
    assert len(commands) == annotations, commands
    assert all(ANNOTATION.fullmatch(line) for line in commands), commands
    assert text.count("::error ") + text.count("::notice ") == annotations
    assert "##[" not in text


def test_diff_and_parse_of_a_hostile_record_show_its_names_visibly(tmp_path: Path):
    plain, hostile = _records(tmp_path)
    code, out, err = _guarddiag("diff", str(plain), str(hostile), cwd=tmp_path)
    assert code == 0, err
    _assert_ci_log(out + err)
    shown = "rollout\\x1b]52;c;SGVsbG8=\\x07\\x1b]0;owned\\x07\\x1b[2J\\u202eevil\\r\\n::stop-commands::x\\n::add-mask::s ##\\[error]"
    assert shown in out
    code, md, err = _guarddiag("diff", "-f", "markdown", str(plain), str(hostile), cwd=tmp_path)
    _assert_ci_log(md + err)
    _assert_markdown(md)
    code, doc, _ = _guarddiag("diff", "-f", "json", str(plain), str(hostile), cwd=tmp_path)
    _assert_ci_log(doc)
    names = [f["name"] for f in json.loads(doc)["diffs"][0]["functions"]]
    assert f"rollout{HOSTILE}" in names  # JSON keeps the truth
    # A merge of the record reads it and prints the run report.
    code, out, err = _guarddiag("merge", "--jobs", str(plain), str(hostile), cwd=tmp_path)
    assert code == 0, err
    _assert_ci_log(out + err)


def test_check_of_a_hostile_record_writes_only_its_own_annotations(tmp_path: Path):
    _, hostile = _records(tmp_path)
    summary = tmp_path / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    code, out, err = _guarddiag("check", str(hostile), "--max-recompiles", "0", "--fail-on-limit-hit", cwd=tmp_path, env=env)
    assert code == 5, err
    _assert_ci_log(out + err, annotations=2)  # a regression and a limit hit
    text = summary.read_text(encoding="utf-8")
    _assert_ci_log(text)
    _assert_markdown(text)
    assert "`rollout" not in text or "``" in text  # the label sits in a code span whose fence outlasts its backtick


def test_a_hostile_baseline_and_record_reach_the_step_summary_escaped(tmp_path: Path):
    plain, hostile = _records(tmp_path)
    data = json.loads(hostile.read_text(encoding="utf-8"))
    data["status"], data["exit_code"] = "ok", 0
    hostile.write_text(json.dumps(data), encoding="utf-8")
    base = tmp_path / "base.yaml"
    code, out, err = _guarddiag("baseline", str(hostile), "-o", str(base), cwd=tmp_path)
    assert code == 0, err
    _assert_ci_log(out + err)
    summary = tmp_path / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    # The hostile function regresses against a budget of 0; the baseline's own hostile names are shown as gone.
    code, out, err = _guarddiag("check", str(hostile), "--baseline", str(base), "--max-recompiles", "0", cwd=tmp_path, env=env)
    assert code == 5, err
    _assert_ci_log(out + err, annotations=1)
    _assert_plain(out.split("\n", 1)[1])
    text = summary.read_text(encoding="utf-8")
    _assert_ci_log(text)
    _assert_markdown(text)
    # The same script, its functions renamed: the baseline's hostile function is gone, said in a note.
    renamed = json.loads(plain.read_text(encoding="utf-8"))
    renamed["script"] = data["script"]
    (tmp_path / "renamed.json").write_text(json.dumps(renamed), encoding="utf-8")
    code, out, err = _guarddiag("check", "renamed.json", "--baseline", str(base), cwd=tmp_path, env=env)
    assert "note: rollout\\x1b]52;c;SGVsbG8=\\x07" in out, out
    _assert_ci_log(out + err, annotations=out.count("::notice ") + out.count("::error "))
    _assert_markdown(summary.read_text(encoding="utf-8"))
    for fmt in ("json", "yaml", "markdown"):
        code, doc, err = _guarddiag("check", "-f", fmt, str(hostile), "--max-recompiles", "0", cwd=tmp_path, env=env)
        _assert_ci_log(doc)  # the annotations went to stderr
        _assert_ci_log(err, annotations=1)


def test_an_error_naming_a_hostile_record_is_one_escaped_line_on_stderr(tmp_path: Path):
    _, hostile = _records(tmp_path)
    twin = tmp_path / "twin.json"
    twin.write_bytes(hostile.read_bytes())
    code, out, err = _guarddiag("check", str(hostile), str(twin), "--max-recompiles", "0", cwd=tmp_path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("guarddiag: "), err
    _assert_ci_log(err)
    assert "a second run of `\\x1b]52;c;SGVsbG8=\\x07" in err


def test_a_warning_naming_a_hostile_script_on_disk_is_one_escaped_line(tmp_path: Path):
    """A script's file name is its run folder's name: a warning naming the folder (here the script made
    its run.json a directory) is one escaped line like every other message (was: printed raw, bypassing it)."""
    name = "s\x1b]0;owned\x07\u202e\n::warning::x ##[error]y.py"
    (tmp_path / name).write_text("import glob, os\nfor d in glob.glob('.guarddiag/runs/*/'):\n    os.makedirs(d + 'run.json/x')\n")
    code, out, err = _guarddiag("run", name, cwd=tmp_path)
    assert code == 0 and "cannot write the run record (EISDIR" in err, err
    _assert_plain(out)
    _assert_plain(err)
    assert err.count("\n") == 1 and "s\\x1b]0;owned\\x07\\u202e\\n::warning::x ##\\[error]y" in err, err


@pytest.mark.torch
def test_a_hostile_script_that_recompiles_gets_its_report_and_a_compare_command_that_runs_that_script(tmp_path: Path):
    """A script whose file name holds controls, `::warning::`, `##[`, quotes, `$()` and backticks (no line break: torch
    writes file names raw into its log lines), and whose function recompiles: run's advice names the function by its
    file (a key the escaping layer rebuilt) and gives the compare that verifies its hint, which bash reads as that
    script (was: internal error, FunctionKey rebuilt from an iterable)."""
    name = "s\x1b]0;owned\x07\u202e ::warning::x ##[e]$(touch pwned)`id`';.py"
    (tmp_path / name).write_text(
        'import torch\n@torch.compile(backend="eager")\ndef f(x, k):\n    return x * k\nfor k in (1, 2, 3):\n    f(torch.ones(2), k)\n'
    )
    code, out, err = _guarddiag("run", name, cwd=tmp_path)
    assert code == 0, err
    _assert_ci_log(out + err)
    (command,) = re.findall(r"not verified: (guarddiag compare .*) measures it", out)
    argv = subprocess.run(["bash", "-c", 'eval "set -- ${0#guarddiag }"; printf "%s\\0" "$@"', command],
                          capture_output=True, check=True).stdout.split(b"\0")[:-1]
    assert argv[:2] == [b"compare", os.fsencode(name)], argv
    assert not (tmp_path / "pwned").exists()


def test_explain_of_a_record_whose_script_holds_a_nul_explains_it(tmp_path: Path):
    """No run has a NUL in its path: a forged record's script has no verdicts to read (was: internal error,
    ValueError: embedded null byte, where explain looked its verdicts up)."""
    plain, _ = _records(tmp_path)
    data = json.loads(plain.read_text(encoding="utf-8"))
    data.update(source="run", script="a\x00\x1b[2Jb.py", torch_version="2.13.0", argv=["\x00"])
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = _guarddiag("explain", str(forged), cwd=tmp_path)
    assert code == 0, err
    _assert_ci_log(out + err)
