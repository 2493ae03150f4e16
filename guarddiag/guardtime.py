"""What each call's cache lookup cost, as the child measured it (``run --measure-guards``,
``child/_site/_guarddiag_guardtime.py``), onto the functions of the model.

The child writes ``guard_time.json`` in the run folder: per torch frame id of the main process, the calls that
ran its compiled code, the lookups that missed, and the timed lookups' figures. A frame is placed on the
function whose frame ids hold it in the main process. torch's frame ids restart after
``torch._dynamo.reset()``: the child cannot tell the generations apart, so a frame's calls after a reset count
under the function of its first generation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from guarddiag.child._site._guarddiag_guardtime import GUARD_TIME_NAME, SCHEMA
from guarddiag.ids import MAIN_PROCESS, FrameId
from guarddiag.model import FunctionSummary, GuardTime

# The figures of a frame, in microseconds (None where nothing was timed).
FIGURES = ("median_us", "p10_us", "p90_us", "max_us", "total_us")


@dataclass(frozen=True)
class Measured:
    """What the child measured: each frame's figures, or why it measured nothing (``error``)."""

    frames: tuple[GuardTime, ...]
    error: str | None = None


def read_guard_time(run_dir: Path) -> Measured | None:
    """The run folder's ``guard_time.json``; None when there is none (the script did not end by itself, or the
    run was not asked to measure), a Measured with ``error`` when it cannot be read."""
    try:
        text = (run_dir / GUARD_TIME_NAME).read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} file")
        if data.get("error") is not None:
            return Measured((), str(data["error"]))
        frames = data.get("frames")
        if not isinstance(frames, dict):
            raise ValueError("frames: expected an object")
        return Measured(tuple(guard_time_from_dict({**v, "frame": k}, f"frames.{k}") for k, v in frames.items()))
    except (ValueError, TypeError, AttributeError) as exc:
        return Measured((), f"{GUARD_TIME_NAME} unreadable: {exc}"[:300])


def guard_time_from_dict(raw: object, where: str) -> GuardTime:
    """One frame's figures from their JSON form (the child's file, a run record); raises ValueError or
    TypeError for a value of the wrong type or out of range."""
    if not isinstance(raw, dict):
        raise TypeError(f"{where}: expected an object, got {type(raw).__name__}")
    frame = raw.get("frame")
    if not isinstance(frame, str) or not frame:
        raise TypeError(f"{where}.frame: expected a frame id, got {frame!r}"[:200])
    counts = []
    for name in ("calls", "misses", "timed"):
        value = raw.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where}.{name}: expected a whole number >= 0, got {value!r}"[:200])
        counts.append(value)
    figures = []
    for name in FIGURES:
        value = raw.get(name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and not (number and math.isfinite(value) and value >= 0):  # type: ignore[arg-type,operator]
            raise ValueError(f"{where}.{name}: expected microseconds >= 0 or null, got {value!r}"[:200])
        figures.append(None if value is None else float(value))
    if (counts[2] > 0) != (figures[0] is not None) or counts[2] > counts[0]:
        raise ValueError(f"{where}: timed lookups ({counts[2]}) and their figures disagree, or exceed its calls ({counts[0]})")
    return GuardTime(FrameId.parse(frame), *counts, *figures)


def with_guard_times(functions: Iterable[FunctionSummary], measured: Measured) -> list[FunctionSummary]:
    """Each function with the figures of its frames in the main process (``FunctionSummary.guard_times``)."""
    by_frame = {m.frame: m for m in measured.frames}
    out = []
    for f in functions:
        mine = tuple(by_frame[i] for i in f.frame_ids if i.process == MAIN_PROCESS and i in by_frame)
        out.append(replace(f, guard_times=mine) if mine else f)
    return out
