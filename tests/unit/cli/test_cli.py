"""cli.py in-process (--version and -V too): options reach the commands, and every failure is one ``guarddiag:`` line and
its exit code (main() with argv, no torch run, no subprocess)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from guarddiag import __version__, cli
from guarddiag.errors import INTERNAL, OK, REGRESSION, USAGE
from tests.conftest import LOGS

LOG = str(LOGS / "torch-2.13.0" / "module_int_attribute.log")


@pytest.fixture
def main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``main(*argv) -> (exit code, stdout, stderr)``; main() installs a SIGTERM handler, put back after."""
    previous = signal.getsignal(signal.SIGTERM)

    def call(*argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.argv", ["guarddiag", *argv])
        with pytest.raises(SystemExit) as stop:
            cli.main()
        out = capsys.readouterr()
        return int(stop.value.code or 0), out.out, out.err

    yield call
    signal.signal(signal.SIGTERM, previous)


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("guarddiag: ") and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "script.py"),
        ("parse", LOG),
        ("compare", "script.py", "--flag", "specialize_float"),
        ("diff", "a.json", "b.json"),
        ("flags",),
        ("check", "run.json"),
        ("explain", LOG),
    ],
)
def test_every_command_with_a_report_refuses_an_unknown_format_before_any_work(main, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing there: a command that went on would fail on a missing file instead
    code, out, err = main(*argv, "--format", "xml")
    assert (code, out) == (USAGE, "")
    assert _one_line(err) == "guarddiag: --format xml: unknown format; use one of table, json, yaml, markdown"


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        (("parse",), "guarddiag: Missing argument 'logfiles'; see `guarddiag parse --help`"),
        (("check", "--max-recompiles", "-1"), "guarddiag: Invalid value for '--max-recompiles': -1 is not in the range x>=0; "
                                               "see `guarddiag check --help`"),
        (("compare", "s.py", "--jobs", "0"), "guarddiag: Invalid value for '--jobs' / '-j': 0 is not in the range x>=1; "
                                             "see `guarddiag compare --help`"),
        (("flags", "--format"), "guarddiag: Option '--format' requires an argument; see `guarddiag --help`"),
        (("bogus",), "guarddiag: No such command 'bogus'; see `guarddiag --help`"),
    ],
)
def test_usage_errors_are_one_line_naming_the_help_to_read(main, argv, expect):
    code, _, err = main(*argv)
    assert code == USAGE and _one_line(err) == expect


def test_parse_options_reach_the_command(main, tmp_path):
    record = tmp_path / "r.json"
    code, out, err = main("parse", LOG, "-f", "json", "-o", str(record))
    assert (code, err) == (OK, "")
    assert '"recompiles": 5' in out and record.read_text().startswith("{")


def test_check_options_reach_the_gate(main, tmp_path):
    record = tmp_path / "r.json"
    main("parse", LOG, "-o", str(record))
    assert main("check", str(record), "--max-recompiles", "5")[0] == OK
    code, out, _ = main("check", str(record), "--max-recompiles", "4", "-f", "json")
    assert code == REGRESSION and '"allowed": 4' in out


def test_missing_inputs_are_one_line(main, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = main("diff", "a.json", "b.json")
    assert code == USAGE and "a.json" in _one_line(err)
    code, _, err = main("baseline")
    assert code == USAGE and "nothing to check" in _one_line(err)
    code, _, err = main("run", "nope.py")
    assert code == USAGE and "no such script" in _one_line(err)


def test_version_and_clean_print_one_line(main, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".guarddiag" / "runs" / "old").mkdir(parents=True)
    (tmp_path / ".guarddiag" / "runs" / "old" / "guarddiag.lock").touch()  # a folder guarddiag made, its run over
    assert main("version") == (OK, __version__ + "\n", "")
    assert main("clean") == (OK, "removed 1 run folder(s) from .guarddiag/runs\n", "")
    assert not (tmp_path / ".guarddiag" / "runs" / "old").exists()


def test_a_bug_is_one_line_asking_for_debug_and_debug_shows_it(main, monkeypatch):
    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("guarddiag.commands.diff.diff_command", broken)
    code, _, err = main("diff", "a.json", "b.json")
    assert code == INTERNAL
    assert _one_line(err).startswith("guarddiag: internal error: RuntimeError: boom; this is a bug in guarddiag")
    monkeypatch.setattr("sys.argv", ["guarddiag", "diff", "a.json", "b.json", "--debug"])
    with pytest.raises(RuntimeError, match="boom"):
        cli.main()


def test_help_lists_every_command(main):
    code, out, _ = main("--help")
    assert code == OK
    for command in ("run", "parse", "compare", "diff", "flags", "baseline", "check", "explain", "clean", "version"):
        assert f"  {command} " in out


def test_the_cli_module_is_wiring_only():
    """Each command's body lives in guarddiag/commands/: cli.py declares options and calls it."""
    text = Path(cli.__file__).read_text()
    bodies = [line for line in text.splitlines() if line.startswith("    ") and "guarddiag.commands." in line]
    assert len(bodies) >= 9, bodies


@pytest.mark.parametrize("option", ["--version", "-V"])
def test_the_version_option_prints_the_name_and_version(main, option):
    assert main(option) == (OK, f"guarddiag {__version__}\n", "")


def test_the_version_option_wins_over_a_command(main):
    """Eager, as click's own --help is: a command after it is not run."""
    assert main("--version", "run", "no-such-script.py") == (OK, f"guarddiag {__version__}\n", "")


