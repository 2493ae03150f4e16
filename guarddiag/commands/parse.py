"""``guarddiag parse``: the run report from torch logs captured elsewhere."""

from __future__ import annotations

from pathlib import Path

from guarddiag.commands.options import check_format
from guarddiag.commands.run import finish


def parse_command(logfiles: list[str], fmt: str, out: Path | None, strict: bool) -> None:
    """Read the logs (pieces of one log merge in order), print the report, save the record."""
    from guarddiag.pipeline import parse_logs
    from guarddiag.report import run_report

    check_format(fmt)
    finish(run_report(parse_logs(logfiles)), fmt, out, strict)
