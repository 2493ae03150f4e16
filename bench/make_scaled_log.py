"""Build a big log (default 1 GiB) by repeating model.log with fresh compile ids, streaming.

Every copy of ``bench/data/model.log`` is a *new compile of the same frames*: in copy k the
compile id ``[F/N]`` (and ``[F/N_a]``) becomes ``[F/N + k*C_F]`` where ``C_F`` is the number of
compiles frame F has in model.log, and the cache entries named in recompile reasons
(``- F/N: guard``) are shifted the same way. So the scaled log reads like one long job whose
two frames keep recompiling: compile ids stay unique and increasing, the functions stay the
same, and a parser that keeps per-compile state (guard listings, events) grows with the log
while one that keeps only what the report needs does not. ``--fresh-frames`` instead turns each
copy into new frames ``[F + k*nframes/N]`` of the same functions.

Only model.log (a few MB) is held in memory; the output is written copy by copy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# The compile id after the prefix, and a cache entry named in a recompile reason on the same line.
_PREFIX_CID = re.compile(r"^[^\]]*\] \[(?P<frame>\d+)/(?P<number>\d+)(?:_\d+)?\]")
_CACHE_ENTRY = re.compile(r"\[__recompiles(?:_verbose)?\]\s+- (?P<frame>\d+)/(?P<number>\d+):")
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_size(text: str) -> int:
    """``1GiB`` -> 1073741824, ``50MB`` -> 50000000, ``123`` -> 123 bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None or m[2].lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"size {text!r}: use a number with B, KB, MB, GB, KiB, MiB or GiB")
    return int(float(m[1]) * _UNITS[m[2].lower()])


# A line to renumber: its text cut at each compile id, and the (frame, number) that goes in each cut.
Renumbered = tuple[tuple[str, ...], tuple[tuple[int, int], ...]]
Template = list[Renumbered | str]


def _split_line(line: str, compiles: dict[int, int]) -> Renumbered | str:
    spans = []
    m = _PREFIX_CID.match(line)
    if m is not None:
        spans.append(m)
        entry = _CACHE_ENTRY.search(line, m.end())
        if entry is not None:
            spans.append(entry)
    if not spans:
        return line
    parts, ids, pos = [], [], 0
    for match in spans:
        frame, number = int(match["frame"]), int(match["number"])
        compiles[frame] = max(compiles.get(frame, 0), number + 1)
        parts.append(line[pos : match.start("frame")])
        ids.append((frame, number))
        pos = match.end("number")
    parts.append(line[pos:])
    return tuple(parts), tuple(ids)


def load_template(source: Path) -> tuple[Template, dict[int, int], int]:
    """Split model.log into constant lines and lines with compile ids to renumber."""
    compiles: dict[int, int] = {}
    with source.open(encoding="utf-8", errors="surrogateescape", newline="") as fh:
        template: Template = [_split_line(line, compiles) for line in fh]
    if not compiles:
        raise SystemExit(f"make_scaled_log: {source} has no compile ids [F/N]; is it a torch log?")
    return template, compiles, max(compiles) + 1


def render_copy(template: Template, copy: int, compiles: dict[int, int], frames: int, fresh_frames: bool) -> str:
    """The text of copy ``copy`` (copy 0 is model.log unchanged)."""
    out: list[str] = []
    append = out.append
    for piece in template:
        if isinstance(piece, str):
            append(piece)
            continue
        parts, ids = piece
        for text, (frame, number) in zip(parts, ids, strict=False):
            append(text)
            append(f"{frame + copy * frames}/{number}" if fresh_frames else f"{frame}/{number + copy * compiles[frame]}")
        append(parts[-1])
    return "".join(out)


def build(source: Path, out: Path, size: int, fresh_frames: bool = False) -> dict[str, object]:
    """Write whole renumbered copies of ``source`` until ``out`` holds about ``size`` bytes; return its facts."""
    if not source.is_file():
        raise SystemExit(f"make_scaled_log: {source} not found; run `python bench/make_model_log.py` first")
    template, compiles, frames = load_template(source)
    source_lines = len(template)
    copies = max(1, round(size / source.stat().st_size))
    free = os.statvfs(out.parent if out.parent.exists() else Path.cwd())
    if free.f_bavail * free.f_frsize < copies * source.stat().st_size + 2**30:
        raise SystemExit(f"make_scaled_log: not enough free disk for {copies} copies of {source} in {out.parent}; pass a smaller --size")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    written = 0
    with tmp.open("w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        for copy in range(copies):
            written += fh.write(render_copy(template, copy, compiles, frames, fresh_frames))
    os.replace(tmp, out)
    facts: dict[str, object] = {
        "source": str(source),
        "bytes": out.stat().st_size,
        "lines": source_lines * copies,
        "copies": copies,
        "mode": "fresh-frames" if fresh_frames else "fresh-compiles",
        "compiles_per_copy": sum(compiles.values()),
    }
    Path(str(out) + ".json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
    return facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=BENCH / "data" / "model.log")
    parser.add_argument("--out", type=Path, default=BENCH / "data" / "scaled.log")
    parser.add_argument("--size", type=parse_size, default=2**30, help="target size, e.g. 1GiB (default), 200MB")
    parser.add_argument("--fresh-frames", action="store_true", help="make each copy new frames instead of new compiles")
    args = parser.parse_args()
    facts = build(args.source, args.out, args.size, args.fresh_frames)
    print(f"{args.out}: {facts['bytes'] / 1e6:.0f} MB, {facts['lines']} lines, {facts['copies']} copies ({facts['mode']})", file=sys.stderr)


if __name__ == "__main__":
    main()
