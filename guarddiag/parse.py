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
        if stats.torch_lines == 0:
            raise InputError(f"standard input: no torch log lines in {stats.lines} lines read; pipe in a log captured with TORCH_LOGS=...")
        return Run(functions=functions, parse=stats, source="parse", log_path="-")
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{path}: is a directory; give a log file, or - to read standard input")
    try:
        with p.open(encoding="utf-8", errors="replace", newline="") as fh:
            functions, stats = build_from_lines(fh)
    except FileNotFoundError:
        raise InputError(f"{path}: no such log file; give a log file, or - to read standard input") from None
    except PermissionError:
        raise InputError(f"{path}: cannot be read (permission denied)") from None
    if stats.torch_lines == 0:
        raise InputError(
            f"{path}: no torch log lines in {stats.lines} lines read; capture the log with "
            "TORCH_LOGS=dynamo,guards,recompiles,graph_breaks (or use `guarddiag run`)"
        )
    return Run(functions=functions, parse=stats, source="parse", log_path=str(p))
