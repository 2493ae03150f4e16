"""``guarddiag parse``: a run record from a log captured elsewhere (CI log, torchrun, a paste)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from guarddiag.build import build_from_lines
from guarddiag.errors import InputError
from guarddiag.model import Run


def parse_log(path: str) -> Run:
    """Parse a log file (``-`` for stdin); undecodable bytes are replaced, never fatal."""
    return parse_logs([path])


def parse_logs(paths: Sequence[str]) -> Run:
    """Parse pieces of one log (a CI log split in several files), in order, as the one log they are
    (``cat`` of the pieces): one parser reads them all, so a record or a line cut at a file boundary,
    or compile ids that restart after a ``torch._dynamo.reset()`` in an earlier piece, read as in the
    whole log."""
    for path in paths:
        if path != "-" and Path(path).is_dir():
            raise InputError(f"{path}: is a directory; give a log file, or - to read standard input")
    with contextlib.ExitStack() as stack:
        streams = [(path, _open(path, stack)) for path in paths]
        functions, stats = build_from_lines(_lines(streams))
    where = "standard input" if list(paths) == ["-"] else ", ".join(paths)
    if stats.torch_lines == 0:
        raise InputError(
            f"{where}: no torch log lines in {stats.lines} lines read; capture the log with "
            "TORCH_LOGS=dynamo,guards,recompiles,graph_breaks (or use `guarddiag run`)"
        )
    return Run(functions=functions, parse=stats, source="parse", log_path=paths[0] if len(paths) == 1 else ", ".join(paths))


def _open(path: str, stack: contextlib.ExitStack) -> TextIO:
    if path == "-":
        return stack.enter_context(open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False))  # noqa: SIM115
    try:
        return stack.enter_context(Path(path).open(encoding="utf-8", errors="replace", newline=""))
    except FileNotFoundError:
        raise InputError(f"{path}: no such log file; give a log file, or - to read standard input") from None
    except PermissionError:
        raise InputError(f"{path}: cannot be read (permission denied)") from None


def _lines(streams: Sequence[tuple[str, TextIO]]) -> Iterator[str]:
    """Every line of the pieces as ``cat`` would join them: a piece cut mid-line continues in the next."""
    carry = ""
    for _, stream in streams:
        for line in stream:
            if carry:
                line, carry = carry + line, ""
            if line.endswith(("\n", "\r")):
                yield line
            else:
                carry = line  # only a piece's last line lacks its newline
    if carry:
        yield carry
