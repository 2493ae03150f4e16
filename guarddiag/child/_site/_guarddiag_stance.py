"""Calls a compiler stance (``torch.compiler.set_stance``) refused to recompile, counted where torch refuses them.

torch logs nothing for them. Every call of a compiled function asks ``torch._dynamo.eval_frame.
_callback_from_stance`` which frame callback to run under; this file wraps that function:

* ``eager_on_recompile``: torch answers ``False`` ("run only": the C frame evaluator runs the cache entry
  whose guards pass, else the frame eagerly, and calls no Python at all). The wrapper answers instead
  with a callback the evaluator calls only when no entry passed; it records the function and the reasons
  torch would give for each entry (``get_and_maybe_log_recompilation_reasons(..., skip_logging=True)``,
  as ``fail_on_recompile``'s message does), then tells the evaluator what run-only mode does: run this
  frame as it is and the frames it calls in run-only mode, storing nothing on the code object. Its
  backend is ``False``, so the cache lookup takes every backend's entries, as run-only mode's does. A
  call that finds its entry costs one Python call more (the wrapper); a refused one, the reasons too.
  This needs torch's frame execution strategies (``ConvertFrameReturn``, torch 2.7+): on an older torch
  the stance's use is noted as not counted, and its calls run as torch runs them.
* ``fail_on_recompile``: torch's callback raises ``RuntimeError`` for a call no entry takes; each raise
  is recorded (a script that catches it and runs the call eagerly is the common serving pattern).
* ``skip_guard_eval_unsafe``: the evaluator checks only the guards that tell cache entries apart and
  calls no Python: a call that would fail the full guards runs another entry's code, and one no entry
  takes raises in C. Neither can be seen from here; the stance's use is noted as not counted.

On a torch without ``_callback_from_stance`` (one that moved it), torch's stance setter is watched instead:
a refusing stance coming into force is noted as not counted, never read as a run without refusals.

Records go to the process's ledger sinks (``_guarddiag_process``): ``{"stance": NAME, "counted": BOOL}``
once per stance in use, and ``{"refused": STANCE, "name", "file", "line", "entries", "reasons", "calls"}``
per function, stance and reasons (the same reasons are one record): the calls so far, written at the 1st,
2nd, 4th, ... call, at most every second, and at exit; the reader keeps the highest count. Standard
library only; it never imports torch itself.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import time

_EVAL_FRAME = "torch._dynamo.eval_frame"
# Text torch's fail_on_recompile callback starts its RuntimeError with (torch 2.6 and later).
FAIL_TEXT = "Detected recompile when torch.compile stance is 'fail_on_recompile'"
_REASON_CHARS = 1000
_FLUSH_S = 1.0

# Reasons kept by what failed against each entry (_failure_key), at most this many.
_REASONS: dict[tuple, tuple[str, ...] | None] = {}
_REASONS_KEPT = 4096
# (stance, name, file, line, reasons) -> [calls, calls written, when written, record]
_COUNTS: dict[tuple, list] = {}
# The stances this process noted (name, counted): each once per process.
_NOTED: set[tuple[str, bool]] = set()
_STATE: dict[str, object] = {}


def install() -> bool:
    """Count refused calls in this process from when torch's eval_frame loads (now, if it has); False
    when the hook could not be set up (the run goes on without)."""
    try:
        import _guarddiag_process

        if _STATE:
            return True
        _STATE["process"] = _guarddiag_process
        _guarddiag_process.when_imported(_EVAL_FRAME, _patch)
        atexit.register(_flush_all)
        if hasattr(os, "register_at_fork"):
            # A forked process counts its own calls, in its own ledger file.
            os.register_at_fork(after_in_child=_forget)
        return True
    except Exception:  # noqa: BLE001 - a diagnostic never stops the user's script
        return False


def _patch(module) -> None:  # noqa: ANN001
    original = getattr(module, "_callback_from_stance", None)
    if original is None:
        # A torch that moved what this file wraps: a refusing stance is still seen coming into force, and
        # noted as not counted, so that the report never reads its refused calls as none.
        _state_setters(module)
        _STATE["process"].when_imported(_DECORATORS, _state_setters)  # type: ignore[attr-defined]
        return
    if getattr(original, "_guarddiag", False):
        return
    run_eagerly = _run_eagerly()

    def _callback_from_stance(callback):  # noqa: ANN001, ANN202
        result = original(callback)
        stance = getattr(module, "_stance", None)
        name = getattr(stance, "stance", "default")
        unsafe = getattr(stance, "skip_guard_eval_unsafe", False) is True
        if name == "default" and not unsafe:
            return result
        with contextlib.suppress(Exception):  # counting never changes what torch runs
            if unsafe:
                _note("skip_guard_eval_unsafe", False)
            if name == "eager_on_recompile" and result is False and callback not in (False, None):
                _note(name, run_eagerly is not None)
                if run_eagerly is not None:
                    return _refusing(callback, run_eagerly)
            elif name == "fail_on_recompile" and callable(result):
                _note(name, True)
                return _failing(result, callback)
        return result

    _callback_from_stance._guarddiag = True  # type: ignore[attr-defined]
    module._callback_from_stance = _callback_from_stance
    _as_run_only()


_DECORATORS = "torch._dynamo.decorators"
# The stances that refuse recompiles (``skip_guard_eval_unsafe`` is a flag of any stance).
REFUSING = ("eager_on_recompile", "fail_on_recompile")


def _state_setters(module) -> None:  # noqa: ANN001
    """Wrap a module's ``_set_stance`` (torch's setter, which ``torch.compiler.set_stance`` calls; decorators
    imports it by name) so that a refusing stance in force is noted as not counted."""
    setter = getattr(module, "_set_stance", None)
    if setter is None or getattr(setter, "_guarddiag", False):
        return

    def _set_stance(stance):  # noqa: ANN001, ANN202
        with contextlib.suppress(Exception):
            name = getattr(stance, "stance", "default")
            if name in REFUSING:
                _note(name, False)
            if getattr(stance, "skip_guard_eval_unsafe", False) is True:
                _note("skip_guard_eval_unsafe", False)
        return setter(stance)

    _set_stance.__dict__.update(setter.__dict__)  # torch's own marks (_dynamo_forbidden)
    _set_stance._guarddiag = True  # type: ignore[attr-defined]
    module._set_stance = _set_stance


def _as_run_only() -> None:
    """Where torch asks for the current callback (set_stance refuses to run in a compiled region), the
    counting callback answers as torch's own would have: ``False``. Compiled code runs what it calls
    under the callback its call was made with, which is the counting one where torch's is ``False``."""
    from torch._C._dynamo import eval_frame as c_eval_frame

    current = getattr(c_eval_frame, "get_eval_frame_callback", None)
    if current is None or getattr(current, "_guarddiag", False):
        return

    def get_eval_frame_callback():  # noqa: ANN202
        callback = current()
        return False if getattr(callback, "_guarddiag_run_only", False) else callback

    get_eval_frame_callback._guarddiag = True  # type: ignore[attr-defined]
    c_eval_frame.get_eval_frame_callback = get_eval_frame_callback


def _note(stance: str, counted: bool) -> None:
    if (stance, counted) not in _NOTED:
        _NOTED.add((stance, counted))
        _emit({"stance": stance, "counted": counted})


def _forget() -> None:
    _COUNTS.clear()
    _REASONS.clear()
    _NOTED.clear()


def _run_eagerly():  # noqa: ANN202
    """What a callback returns to run its frame as it is, the frames it calls in run-only mode, and store
    nothing on the code; None on a torch whose callbacks cannot say so (before 2.7)."""
    try:
        from torch._dynamo.types import ConvertFrameReturn, FrameAction, FrameExecStrategy

        return ConvertFrameReturn(
            frame_exec_strategy=FrameExecStrategy(FrameAction.DEFAULT, FrameAction.RUN_ONLY), apply_to_code=False
        )
    except Exception:  # noqa: BLE001 - an older torch: no strategies, or other fields
        return None


def _refusing(callback, run_eagerly):  # noqa: ANN001, ANN202
    """The callback eager_on_recompile runs under: called only for a frame no cache entry took."""

    def refused(frame, *args, **kwargs):  # noqa: ANN001, ANN202, ARG001 - torch's callback protocol
        with contextlib.suppress(Exception):
            _count("eager_on_recompile", frame, callback)
        return run_eagerly

    # The evaluator's backend of this callback is False: every backend's entries are looked up, as in run-only mode.
    refused._torchdynamo_orig_backend = False  # type: ignore[attr-defined]
    refused._torchdynamo_orig_callable = False  # type: ignore[attr-defined]
    refused._guarddiag_run_only = True  # type: ignore[attr-defined]
    return refused


def _failing(fail_callback, callback):  # noqa: ANN001, ANN202
    """torch's fail_on_recompile callback, each RuntimeError it raises counted."""

    def failing(frame, *args, **kwargs):  # noqa: ANN001, ANN202
        try:
            return fail_callback(frame, *args, **kwargs)
        except RuntimeError as exc:
            if str(exc).startswith(FAIL_TEXT):
                with contextlib.suppress(Exception):
                    _count("fail_on_recompile", frame, callback)
            raise

    # The same backend chain as torch's callback, so that the cache lookup takes the same entries.
    for name in ("_torchdynamo_orig_backend", "_torchdynamo_orig_callable"):
        if hasattr(fail_callback, name):
            setattr(failing, name, fail_callback)
    return failing


def _count(stance: str, frame, callback) -> None:  # noqa: ANN001
    """One refused call of ``frame``'s function; a function never compiled (no cache entry) is refused
    no recompile and is not counted."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    code = frame.f_code
    entries = list(_debug_get_cache_entry_list(code))
    if not entries:
        return
    reasons = _reasons(entries, frame, callback)
    key = (stance, code.co_name, code.co_filename, code.co_firstlineno, reasons)
    counts = _COUNTS.get(key)
    if counts is None:
        record = {
            "refused": stance,
            "name": code.co_name,
            "file": code.co_filename,
            "line": code.co_firstlineno,
            "entries": len(entries),
            "reasons": None if reasons is None else list(reasons),
        }
        counts = _COUNTS[key] = [0, 0, 0.0, record]
    counts[0] += 1
    calls = counts[0]
    now = time.monotonic()
    if calls & (calls - 1) == 0 or now - counts[2] >= _FLUSH_S:
        _flush(counts, now)


def _reasons(entries: list, frame, callback) -> tuple[str, ...] | None:  # noqa: ANN001
    """torch's reason for each cache entry, as its recompile message gives them; None on a torch that
    cannot give them without logging a recompile that did not happen.

    torch's reason against an entry whose failing guard names one code part (``check_verbose``) is that
    part, as its reason function says (every version with guard managers): such reasons are kept by
    entry and part, and a later call that fails alike reuses them instead of formatting them again
    (most of what counting a refused call would cost). Any other failure asks torch every time."""
    key = _failure_key(entries, frame)
    found = _REASONS.get(key) if key is not None else None
    if found is None:
        found = _torch_reasons(entries, frame, callback)
        if key is not None:
            if len(_REASONS) >= _REASONS_KEPT:
                _REASONS.clear()
            _REASONS[key] = found
    return found


def _failure_key(entries: list, frame) -> tuple | None:  # noqa: ANN001
    """What failed against each entry, as torch's guard managers tell it cheaply: (entry, failing code
    part) each; None when a failure is not one code part (a shape guard's list, aliasing)."""
    f_locals = frame.f_locals
    key = [frame.f_code]
    for entry in entries:
        check = getattr(entry.guard_manager, "check_verbose", None)
        if check is None:
            return None
        info = check(f_locals)
        parts = info.verbose_code_parts
        if info.result or len(parts) != 1 or "Duplicate tensor found" in parts[0]:
            return None
        key.append((str(entry.compile_id), parts[0]))
    return tuple(key)


def _torch_reasons(entries: list, frame, callback) -> tuple[str, ...] | None:  # noqa: ANN001
    from torch._dynamo import eval_frame, guards

    reasons_of = getattr(guards, "get_and_maybe_log_recompilation_reasons", None)
    form = _STATE.get("form")
    if form is None:
        form = _STATE["form"] = _form_of(reasons_of)
    if form == "none":
        return None
    backend = getattr(eval_frame, "innermost_backend", lambda fn: fn)(callback)
    first = entries if form.startswith("list") else entries[0]
    args = (first, frame, backend) if form.endswith("backend") else (first, frame)
    # One reason per entry, without the user stack torch appends; in entry order (torch lists the
    # entry it used last first), so that the same failures are one record however the cache moved.
    found = (str(r).partition("\nUser stack trace:")[0][:_REASON_CHARS] for r in reasons_of(*args, skip_logging=True))
    return tuple(sorted(found, key=_entry_order))


def _entry_order(reason: str) -> tuple[int, ...]:
    """``2/10: ...`` -> (2, 10): the cache entry a reason is about, as numbers."""
    head = reason.partition(": ")[0].lstrip("!")
    return tuple(int(n) for n in head.replace("_", "/").split("/") if n.isdigit())


def _form_of(function) -> str:  # noqa: ANN001
    """How this torch's reasons function is called: with a list of cache entries or the first of a
    linked list, with or without a backend; ``none`` when it has no ``skip_logging`` (it would log)."""
    import inspect

    try:
        params = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return "none"
    if "skip_logging" not in params:
        return "none"
    shape = "list" if params[0] == "cache_entries" else "linked"
    return f"{shape}+backend" if "backend" in params else shape


def _flush(counts: list, now: float) -> None:
    if counts[1] == counts[0]:
        return
    counts[1], counts[2] = counts[0], now
    _emit({**counts[3], "calls": counts[0]})


def _flush_all() -> None:
    now = time.monotonic()
    for counts in list(_COUNTS.values()):
        with contextlib.suppress(Exception):
            _flush(counts, now)


def _emit(record: dict) -> None:
    process = _STATE.get("process")
    if process is not None:
        process.emit(record)
