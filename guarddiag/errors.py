"""One exception root with an exit code; caught only in the CLI's entry point."""

from __future__ import annotations

# Exit codes of the guarddiag command (README "Exit codes" lists them for users).
OK = 0
INTERNAL = 1
USAGE = 2
SCRIPT_FAILED = 3
STRICT = 4
REGRESSION = 5
INTERRUPTED = 130


class GuarddiagError(Exception):
    """A failure the user can act on: printed as one line, exits with ``exit_code``."""

    exit_code = USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(GuarddiagError):
    """A script, log, record or option the user gave cannot be used."""


class StrictParseError(GuarddiagError):
    """``--strict``: the log had torch lines guarddiag did not understand."""

    exit_code = STRICT


class Interrupted(Exception):
    """A second Ctrl-C: the child was killed and guarddiag stops at once."""

    def __init__(self, child_status: int) -> None:
        super().__init__(f"interrupted twice; the script was killed (status {child_status})")
