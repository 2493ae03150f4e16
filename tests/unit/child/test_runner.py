"""child/runner.py only spawns: execute says what the child did (a ChildRun), parses nothing and raises
nothing for a child that did not start the script (no torch: the interpreters here are not Python)."""

from __future__ import annotations

from pathlib import Path

from guarddiag.child.runner import NO_BOOTSTRAP, UNSTARTABLE, ChildRun, RunRequest, execute


def _request(tmp_path: Path, python: str) -> RunRequest:
    script = tmp_path / "train.py"
    script.write_text("print('never run')\n")
    return RunRequest(script=script, python=python, workdir=tmp_path / ".guarddiag", capture_output=True)


def test_an_interpreter_that_exits_without_the_bootstrap_is_no_bootstrap(tmp_path):
    child = execute(_request(tmp_path, "/bin/echo"))
    assert isinstance(child, ChildRun)
    assert (child.status, child.exit_code) == (NO_BOOTSTRAP, 0)
    assert child.folder.is_dir() and child.log_path == child.folder / "torch.log" and child.log_path.exists()
    assert child.duration_s >= 0 and child.meta == {} and child.refusal == {}


def test_an_interpreter_the_os_cannot_start_is_unstartable_with_the_reason(tmp_path):
    not_a_program = tmp_path / "python"
    not_a_program.write_bytes(b"\x00\x01 not an executable format")
    not_a_program.chmod(0o755)
    child = execute(_request(tmp_path, str(not_a_program)))
    assert child.status == UNSTARTABLE and child.exit_code is None
    assert "format" in child.start_error.lower(), child.start_error
