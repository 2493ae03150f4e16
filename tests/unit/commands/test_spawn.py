"""commands/spawn.py: a run request is checked before a run folder is made, and a child that ran no
script is an error naming why (no torch: nothing here starts a Python)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from guarddiag.child.runner import REFUSED, UNSTARTABLE, ChildRun, RunRequest
from guarddiag.commands import spawn
from guarddiag.errors import InputError


def _request(tmp_path: Path, **changes: object) -> RunRequest:
    script = tmp_path / "train.py"
    script.write_text("print('never run')\n")
    values = {"script": script, "python": sys.executable, "workdir": tmp_path / ".guarddiag"}
    return RunRequest(**{**values, **changes})


@pytest.mark.parametrize(
    ("changes", "refusal"),
    [
        ({"timeout": 0.0}, "--timeout 0.0: not a number of seconds above 0"),
        ({"timeout": float("nan")}, "--timeout nan: not a number of seconds above 0"),
        ({"script": Path("no-such.py")}, "no-such.py: no such script"),
        ({"python": "/no/such/python"}, "--python /no/such/python: no such interpreter"),
        ({"python": "/"}, "--python /: is a directory, not an interpreter"),
    ],
)
def test_a_request_that_cannot_run_is_refused_before_a_run_folder_is_made(tmp_path, changes, refusal):
    request = _request(tmp_path, **changes)
    with pytest.raises(InputError, match="^" + re.escape(refusal)):
        spawn.run_script(request)
    assert not request.workdir.exists()


def test_a_directory_is_no_script(tmp_path):
    with pytest.raises(InputError, match="is a directory; give the path of a Python file to run"):
        spawn.check_script(tmp_path)


def test_an_interpreter_without_the_bootstrap_is_an_error_naming_the_folder(tmp_path):
    with pytest.raises(InputError, match=r"^--python /bin/echo exited \(status 0\) without starting guarddiag's bootstrap; .*log folder: "):
        spawn.run_script(_request(tmp_path, python="/bin/echo"))


NO_FLAG = "--flag nope=1: no such flag"


@pytest.mark.parametrize(
    ("child", "message"),
    [
        (
            {"status": REFUSED, "exit_code": 3, "meta": {"error": {"kind": "flag", "message": NO_FLAG, "suggestions": ["nope_a"]}}},
            "--flag nope=1: no such flag (did you mean: nope_a?) [flips]; fix or drop the --flag; nothing was run",
        ),
        (
            {"status": REFUSED, "exit_code": 3, "meta": {"error": {"kind": "torch", "message": "no torch here"}}},
            "no torch here [flips]; install torch there or pick another --python; nothing was run",
        ),
        (
            {"status": UNSTARTABLE, "exit_code": None, "start_error": "Exec format error"},
            "--python py: cannot start it (Exec format error); give the path of a Python that has torch installed",
        ),
    ],
)
def test_a_child_that_ran_no_script_is_an_error_that_says_why(tmp_path, child, message):
    request = RunRequest(script=Path("train.py"), python="py", label="flips")
    with pytest.raises(InputError) as raised:
        spawn.built(ChildRun(request, tmp_path, duration_s=0.0, **child))
    assert str(raised.value) == message
