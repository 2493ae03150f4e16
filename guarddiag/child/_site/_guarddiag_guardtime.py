"""What torch.compile's cache lookup (the guard check of a compiled function's cache entries) costs each call,
measured in the script's process while it runs (``guarddiag run --measure-guards``).

torch wraps each cache lookup in a profiler event, ``TorchDynamo Cache Lookup``
(torch/csrc/dynamo/eval_frame_cpp.cpp, around ``lookup()``), when a profiler is on, and runs the compiled
code of the entry it found under ``Torch-Compiled Region: F/N`` (the entry's compile id, F the frame;
torch/_dynamo/convert_frame.py), on the same thread right after the lookup. So the lookup before a region
is that frame's guard check. The first region of an entry follows the lookup that missed and compiled it:
a miss, not timed. A lookup followed by no region (the frame ran without compiled code: skipped, failed, at
its limit) is counted without a frame.

The profiler records CPU events only (no shapes, stacks, memory or flops), in this thread (the one that
started it: the script's main thread). Standard library only at import: torch is imported by ``start``,
once the bootstrap has imported it. ``summarize`` is pure (tests run it on recorded events).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator

GUARD_TIME_NAME = "guard_time.json"
SCHEMA = "guarddiag.guard_time/1"
LOOKUP = "TorchDynamo Cache Lookup"
REGION = "Torch-Compiled Region: "
# What the file says when the script ran torch's profiler itself: torch keeps one, and the script's replaced this one.
PROFILER_TAKEN = "profiler_taken"
# An event as summarize reads it: name, thread id, start and end in nanoseconds.
Event = tuple[str, int, int, int]

_STATE: dict[str, object] = {}


def start(path: str, log_fd: int | None = None) -> bool:
    """Turn torch's profiler on for this thread, CPU events only; False when it could not (why is written to
    ``path`` and the run goes on unmeasured). Kineto prints a line to stderr at start and stop: ``log_fd``
    takes it instead."""
    try:
        from torch._C._profiler import _ExperimentalConfig
        from torch.autograd import (
            ProfilerActivity,
            ProfilerConfig,
            ProfilerState,
            _enable_profiler,
            _prepare_profiler,
        )

        config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
        activities = {ProfilerActivity.CPU}
        with _stderr_to(log_fd):
            _prepare_profiler(config, activities)
            _enable_profiler(config, activities)
    except Exception as exc:  # noqa: BLE001 - a torch without this profiler, or one already running
        _write(path, {"schema": SCHEMA, "process": "main", "pid": os.getpid(), "error": _error(exc)})
        return False
    _STATE["on"] = True
    return True


def finish(path: str, log_fd: int | None = None) -> bool:
    """Turn the profiler off, attribute its lookups to frames and write them to ``path`` (``guard_time.json``);
    False when it was not on, or the script turned it off (its own profiler) and no events are left."""
    if not _STATE.pop("on", False):
        return False
    try:
        from torch.autograd import _disable_profiler, _profiler_enabled

        if not _profiler_enabled():
            # torch runs one profiler at a time: the script's own (torch.profiler.profile) replaced this one.
            _write(path, {"schema": SCHEMA, "process": "main", "pid": os.getpid(), "error": PROFILER_TAKEN})
            return False
        with _stderr_to(log_fd):
            result = _disable_profiler()
        events = list(_wanted(result.events()))
    except Exception as exc:  # noqa: BLE001 - the script stopped the profiler itself
        _write(path, {"schema": SCHEMA, "process": "main", "pid": os.getpid(), "error": _error(exc)})
        return False
    _write(path, {"schema": SCHEMA, "process": "main", "pid": os.getpid(), **summarize(events)})
    return True


def _error(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def _wanted(events: Iterable[object]) -> Iterator[Event]:
    for e in events:
        name = e.name()
        if name == LOOKUP or name.startswith(REGION):
            begin = e.start_ns()
            yield name, e.start_thread_id(), begin, begin + e.duration_ns()


def summarize(events: Iterable[Event]) -> dict[str, object]:
    """Per frame (torch's frame id, ``0``, ``!0/3``): ``calls`` (runs of its compiled code), ``misses`` (lookups
    that found no entry and compiled the one that then ran), and over the lookups that found an entry
    (``timed``) their ``median_us``, ``p10_us``, ``p90_us``, ``max_us`` and ``total_us``; ``lookups`` in all
    and ``unattributed`` lookups (no compiled code ran after them)."""
    by_thread: dict[int, list[Event]] = {}
    for e in events:
        by_thread.setdefault(e[1], []).append(e)
    seen: set[str] = set()
    timed: dict[str, list[int]] = {}
    calls: dict[str, int] = {}
    misses: dict[str, int] = {}
    lookups = unattributed = 0
    for thread_events in by_thread.values():
        pending: Event | None = None
        for e in sorted(thread_events, key=lambda e: (e[2], -e[3])):
            if e[0] == LOOKUP:
                lookups += 1
                unattributed += pending is not None
                pending = e
                continue
            entry = e[0][len(REGION):]
            frame = entry.rpartition("/")[0]
            if not frame:
                continue  # no compile id ("Unknown"): no frame to place it on
            calls[frame] = calls.get(frame, 0) + 1
            if entry not in seen:
                seen.add(entry)
                misses[frame] = misses.get(frame, 0) + (pending is not None)
            elif pending is not None:
                timed.setdefault(frame, []).append(pending[3] - pending[2])
            pending = None
        unattributed += pending is not None
    frames = {}
    for frame in sorted(calls, key=_frame_order):
        frames[frame] = {"calls": calls[frame], "misses": misses.get(frame, 0), **_stats(timed.get(frame, []))}
    return {"lookups": lookups, "unattributed": unattributed, "frames": frames}


def _frame_order(frame: str) -> tuple[int, str]:
    head = frame.lstrip("!").partition("/")[0]
    return (int(head) if head.isdigit() else -1, frame)


def _stats(durations_ns: list[int]) -> dict[str, object]:
    """The timed lookups' figures in microseconds; the figures are None where none was timed."""
    values = sorted(durations_ns)
    if not values:
        return {"timed": 0, "median_us": None, "p10_us": None, "p90_us": None, "max_us": None, "total_us": None}

    def us(ns: float) -> float:
        return round(ns / 1000, 3)

    return {
        "timed": len(values),
        "median_us": us(_quantile(values, 0.5)),
        "p10_us": us(_quantile(values, 0.1)),
        "p90_us": us(_quantile(values, 0.9)),
        "max_us": us(values[-1]),
        "total_us": us(sum(values)),
    }


def _quantile(values: list[int], q: float) -> float:
    """The ``q`` quantile of sorted ``values``, linear between the two nearest (numpy's default)."""
    at = q * (len(values) - 1)
    low = int(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


@contextlib.contextmanager
def _stderr_to(fd: int | None):
    """File descriptor 2 is ``fd`` for a while (kineto writes to it from C++); as it was when ``fd`` is None."""
    if fd is None:
        yield
        return
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _write(path: str, data: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # the script removed its run folder
            os.unlink(tmp)
