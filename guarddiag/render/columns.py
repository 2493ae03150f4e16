"""A plain column table in tabulate's "simple" format, for the report every run and parse prints.

tabulate itself imports importlib.metadata on import (about 25 ms, a tenth of parsing an 11 MB
log end to end); the other reports keep using it.
"""

from __future__ import annotations

from collections.abc import Sequence

_MIN_PADDING = 2  # tabulate pads a header by two when its values are narrower


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def simple_table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Columns as tabulate(rows, headers) prints them: numbers right-aligned, text left-aligned."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in headers]
    numeric = [bool(col) and all(_is_number(v) or v == "" for v in col) and any(_is_number(v) for v in col) for col in columns]
    widths = [
        max([len(h) + _MIN_PADDING, *(len(str(v)) for v in col)]) for h, col in zip(headers, columns, strict=True)
    ]

    def line(cells: Sequence[object]) -> str:
        out = [str(c).rjust(w) if num else str(c).ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])
