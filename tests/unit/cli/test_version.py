"""``guarddiag --version`` and ``-V``: the name and version on one line, exit 0, before any command
(main() in-process, no subprocess)."""

from __future__ import annotations

import signal

import pytest

from guarddiag import __version__, cli
from guarddiag.errors import OK


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


@pytest.mark.parametrize("option", ["--version", "-V"])
def test_the_version_option_prints_the_name_and_version(main, option):
    assert main(option) == (OK, f"guarddiag {__version__}\n", "")


def test_the_version_option_wins_over_a_command(main):
    """Eager, as click's own --help is: a command after it is not run."""
    assert main("--version", "run", "no-such-script.py") == (OK, f"guarddiag {__version__}\n", "")


def test_the_version_command_still_prints_the_bare_number(main):
    assert main("version") == (OK, f"{__version__}\n", "")
