"""``guarddiag parse``: a run record from a log captured elsewhere (CI log, torchrun, a paste)."""

from __future__ import annotations

import sys
from pathlib import Path

from guarddiag.build import build_from_lines
from guarddiag.errors import InputError
from guarddiag.model import Run


def parse_log(path: str) -> Run:
    """Parse a log file (``-`` for stdin); undecodable bytes are replaced, never fatal."""
    if path == "-":
        stream = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        functions, stats = build_from_lines(stream)
        where = "standard input"
    else:
        if Path(path).is_dir():
            raise InputError(f"{path}: is a directory; give a log file, or - to read standard input")
        try:
            with Path(path).open(encoding="utf-8", errors="replace", newline="") as fh:
                functions, stats = build_from_lines(fh)
        except FileNotFoundError:
            raise InputError(f"{path}: no such log file; give a log file, or - to read standard input") from None
        except PermissionError:
            raise InputError(f"{path}: cannot be read (permission denied)") from None
        where = path
    if stats.torch_lines == 0:
        raise InputError(
            f"{where}: no torch log lines in {stats.lines} lines read; capture the log with "
            "TORCH_LOGS=dynamo,guards,recompiles,graph_breaks (or use `guarddiag run`)"
        )
    return Run(functions=functions, parse=stats, source="parse", log_path=path)
