"""Build a big TORCH_TRACE file (default 1 GiB) by repeating a recorded one with fresh compile ids, streaming.

The trace counterpart of ``make_scaled_log.py``, from the TORCH_TRACE that ``make_model_log.py``
records beside model.log (the same run). Every copy of the trace is *a new compile of the same
frames*: compile ``F/N`` becomes ``F/(N + k*C_F)`` in copy k (``C_F``: compiles of frame F in the
recorded trace) wherever torch writes a compile id:

- the envelope's ``"frame_id": F, "frame_compile_id": N``;
- ``"compile_id": "F/N"`` (``compilation_metrics``, the payload of every ``chromium_event``);
- the cache entries a ``recompile_reasons`` artifact names (``F/N: guard``, as a JSON list item or,
  from torch 2.11, as the bare string of a single reason).

A payload whose text changed gets its md5 recomputed into the envelope's ``has_payload``, as torch
computes it (the payload lines without their tab, joined by newlines), so tlparse counts no
``fail_payload_md5``. Records without a compile id are written once per process by torch (the
interned ``str`` table, the ``torch_version`` artifact): copy 0 keeps them and later copies drop
them, so every ``filename`` index in a stack still refers to the one table entry copy 0 interned.
Copy 0 is the recorded trace byte for byte. Glog timestamps are copied as they are (as
make_scaled_log.py does for the text log).

Only the recorded trace (a few MB) is held in memory; the output is written copy by copy.

    python bench/make_scaled_trace.py --out /tmp/gd-trace/dedicated_log_torch_trace_scaled.log
    python bench/make_scaled_trace.py --size 200MB --out /tmp/t/dedicated_log_torch_trace_200.log
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_scaled_log import parse_size  # noqa: E402  (a sibling script, not a package)

BENCH = Path(__file__).resolve().parent
DEFAULT_OUT = Path("/tmp/guarddiag-bench/trace-scaled/dedicated_log_torch_trace_scaled.log")
# Where torch writes a compile id: the envelope, "compile_id" strings, and a recompile reason's cache entry.
_ENVELOPE_CID = re.compile(r'"frame_id": (?P<frame>\d+), "frame_compile_id": (?P<number>\d+)')
_COMPILE_ID = re.compile(r'"compile_id": "(?P<frame>\d+)/(?P<number>\d+)"')
_REASON_ENTRY = re.compile(r'^\t"?(?P<frame>\d+)/(?P<number>\d+): ')
_HAS_PAYLOAD = re.compile(r'"has_payload": "(?P<hash>[0-9a-f]+)"')

# A line to renumber: its text cut at each compile id, and what goes in each cut: the frame, the text
# between frame and number ("/" or ', "frame_compile_id": '), the number.
Renumbered = tuple[tuple[str, ...], tuple[tuple[int, str, int], ...]]
Piece = Renumbered | str


@dataclass(frozen=True)
class Record:
    """One envelope line and its payload lines, split where compile ids go."""

    envelope: Piece
    payload: tuple[Piece, ...]
    per_process: bool  # no compile id: written once per process, kept in copy 0 only
    rehash: bool  # some payload line carries a compile id: its md5 changes per copy


def _split(line: str, matches: list[re.Match[str]], compiles: dict[int, int]) -> Piece:
    if not matches:
        return line
    parts, ids, pos = [], [], 0
    for match in matches:
        frame, number = int(match["frame"]), int(match["number"])
        compiles[frame] = max(compiles.get(frame, 0), number + 1)
        parts.append(line[pos : match.start("frame")])
        ids.append((frame, line[match.end("frame") : match.start("number")], number))
        pos = match.end("number")
    parts.append(line[pos:])
    return tuple(parts), tuple(ids)


def _record(lines: list[str], compiles: dict[int, int]) -> Record:
    head = lines[0]
    envelope_ids = [*_ENVELOPE_CID.finditer(head), *_COMPILE_ID.finditer(head)]
    envelope_ids.sort(key=lambda m: m.start())
    reasons = '"name": "recompile_reasons"' in head
    payload: list[Piece] = []
    for line in lines[1:]:
        found = list(_COMPILE_ID.finditer(line))
        if reasons and (entry := _REASON_ENTRY.match(line)) is not None:
            found.insert(0, entry)
        payload.append(_split(line, found, compiles))
    return Record(
        envelope=_split(head, envelope_ids, compiles),
        payload=tuple(payload),
        per_process=_ENVELOPE_CID.search(head) is None,
        rehash=any(not isinstance(piece, str) for piece in payload),
    )


def load_template(source: Path) -> tuple[list[Record], dict[int, int]]:
    """Split the trace into records (an envelope line and its tab-indented payload lines)."""
    compiles: dict[int, int] = {}
    records: list[Record] = []
    current: list[str] = []
    with source.open(encoding="utf-8", errors="surrogateescape", newline="") as fh:
        for line in fh:
            if line.startswith("\t") and current:
                current.append(line)
                continue
            if current:
                records.append(_record(current, compiles))
            current = [line]
    if current:
        records.append(_record(current, compiles))
    if not compiles:
        raise SystemExit(f"make_scaled_trace: {source} has no compile ids (\"frame_id\"); is it a TORCH_TRACE file?")
    return records, compiles


def _render(piece: Piece, copy: int, compiles: dict[int, int]) -> str:
    if isinstance(piece, str):
        return piece
    parts, ids = piece
    out = []
    for text, (frame, between, number) in zip(parts, ids, strict=False):
        out.append(f"{text}{frame}{between}{number + copy * compiles[frame]}")
    out.append(parts[-1])
    return "".join(out)


def payload_md5(lines: list[str]) -> str:
    """The md5 torch writes in ``has_payload``: of the payload lines without their tab, joined by newlines."""
    return hashlib.md5("\n".join(line[1:].rstrip("\r\n") for line in lines).encode("utf-8", "surrogateescape")).hexdigest()


def render_copy(records: list[Record], copy: int, compiles: dict[int, int]) -> str:
    """The text of copy ``copy`` (copy 0 is the recorded trace unchanged)."""
    out: list[str] = []
    append = out.append
    for record in records:
        if copy and record.per_process:
            continue
        envelope = _render(record.envelope, copy, compiles)
        if copy and record.rehash:
            payload = [_render(piece, copy, compiles) for piece in record.payload]
            envelope = _HAS_PAYLOAD.sub(f'"has_payload": "{payload_md5(payload)}"', envelope, count=1)
            append(envelope)
            out.extend(payload)
        else:
            append(envelope)
            out.extend(_render(piece, copy, compiles) for piece in record.payload)
    return "".join(out)


def build(source: Path, out: Path, size: int) -> dict[str, object]:
    """Write whole renumbered copies of the trace ``source`` until ``out`` holds about ``size`` bytes; return its facts."""
    if not source.is_file():
        raise SystemExit(f"make_scaled_trace: {source} not found; run `python bench/make_model_log.py` first")
    records, compiles = load_template(source)
    source_size = source.stat().st_size
    copy_size = len(render_copy(records, 1, compiles).encode("utf-8", "surrogateescape"))  # copies after the first lack the str table
    copies = max(1, 1 + round((size - source_size) / copy_size))
    out.parent.mkdir(parents=True, exist_ok=True)
    free = os.statvfs(out.parent)
    if free.f_bavail * free.f_frsize < source_size + (copies - 1) * copy_size + 2**30:
        raise SystemExit(f"make_scaled_trace: not enough free disk for {copies} copies of {source} in {out.parent}; pass a smaller --size")
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        for copy in range(copies):
            fh.write(render_copy(records, copy, compiles))
    os.replace(tmp, out)
    facts: dict[str, object] = {
        "source": str(source),
        "bytes": out.stat().st_size,
        "copies": copies,
        "mode": "fresh-compiles",
        "compiles_per_copy": sum(compiles.values()),
        "records_per_copy": sum(1 for r in records if not r.per_process),
    }
    Path(str(out) + ".json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
    return facts


def recorded_trace(trace_dir: Path) -> Path:
    """The biggest TORCH_TRACE file in ``trace_dir`` (make_model_log.py writes one per run)."""
    traces = sorted(trace_dir.glob("*.log"), key=lambda p: p.stat().st_size, reverse=True)
    if not traces:
        raise SystemExit(f"make_scaled_trace: no TORCH_TRACE file in {trace_dir}; run `python bench/make_model_log.py` first")
    return traces[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="a TORCH_TRACE file (default: the one in bench/data/trace/)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    parser.add_argument("--size", type=parse_size, default=2**30, help="target size, e.g. 1GiB (default), 200MB")
    args = parser.parse_args()
    source = args.source or recorded_trace(BENCH / "data" / "trace")
    facts = build(source, args.out, args.size)
    print(f"{args.out}: {int(facts['bytes']) / 1e6:.0f} MB, {facts['copies']} copies ({facts['mode']})", file=sys.stderr)


if __name__ == "__main__":
    main()
