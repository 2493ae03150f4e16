"""Hooks added to a compiled module after torch compiled it: whether they ran.

With ``torch._dynamo.config.skip_nnmodule_hook_guards`` on (torch's default), compiled code does not
guard on a module's own hooks: a hook registered after the module's code was compiled is not run by
that code, and nothing says so. This file watches ``nn.Module.register_forward_hook``,
``register_forward_pre_hook``, ``register_full_backward_hook`` and ``register_full_backward_pre_hook``.
A registration made once torch has compiled something, on a module that is (inside) a module given to
``torch.compile`` (an ``OptimizedModule``), gets a record: where it was made, how often the hook ran
eagerly, whether Dynamo traced it into a graph, and how often that compiled module was called after
it. The records of each process are appended to ``<run folder>/hooks.jsonl`` when it exits.

Standard library only at import: it patches torch once torch has loaded the classes it patches
(``install``), imports Dynamo's pieces only once something was compiled, and gives up silently on a
torch without them. The hook keeps its behaviour: a wrapper counts and calls it. Dynamo inlines the
wrapper (its frame is never compiled on its own), so compiles and guards stay as they were.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import sys
import weakref

HOOKS_NAME = "hooks.jsonl"
KINDS = {
    "register_forward_hook": "forward",
    "register_forward_pre_hook": "forward_pre",
    "register_full_backward_hook": "full_backward",
    "register_full_backward_pre_hook": "full_backward_pre",
}
_MODULE = "torch.nn.modules.module"
_EVAL_FRAME = "torch._dynamo.eval_frame"
_CHILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # guarddiag/child: bootstrap and site

# Modules given to torch.compile (OptimizedModule), and the calls of those a late hook is on.
_COMPILED: weakref.WeakSet = weakref.WeakSet()
_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RECORDS: list[_LateHook] = []
_STATE: dict[str, object] = {}


def install(folder: str) -> bool:
    """Watch hook registrations of this process, records to ``<folder>/hooks.jsonl`` at exit; False
    when this torch has no such methods (the run goes on without)."""
    try:
        import _guarddiag_process

        if _STATE:
            return True
        _STATE.update(folder=folder, pid=os.getpid())
        _guarddiag_process.when_imported(_MODULE, _patch_registrations)
        _guarddiag_process.when_imported(_EVAL_FRAME, _patch_compiled_module)
        atexit.register(_write)
        return True
    except Exception:  # noqa: BLE001 - a diagnostic never stops the user's script
        return False


def _patch_registrations(module) -> None:  # noqa: ANN001
    cls = getattr(module, "Module", None)
    for method, kind in KINDS.items():
        original = getattr(cls, method, None)
        if original is None or getattr(original, "_guarddiag", False):
            continue
        setattr(cls, method, _registration(original, kind))


def _registration(original, kind: str):  # noqa: ANN001, ANN202
    @functools.wraps(original)
    def register(self, hook, *args, **kwargs):  # noqa: ANN001
        with contextlib.suppress(Exception):  # observing never changes what the script registers
            hook = _observed(self, hook, kind)
        return original(self, hook, *args, **kwargs)

    register._guarddiag = True  # type: ignore[attr-defined]
    return register


def _patch_compiled_module(module) -> None:  # noqa: ANN001
    """Every module given to torch.compile is remembered (weakly) when made; calls are counted once a
    late hook is on it."""
    cls = getattr(module, "OptimizedModule", None)
    if cls is None or getattr(cls.__init__, "_guarddiag", False):
        return
    init, call = cls.__init__, cls.__call__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):  # noqa: ANN001, N807
        init(self, *args, **kwargs)
        _COMPILED.add(self)

    @functools.wraps(call)
    def __call__(self, *args, **kwargs):  # noqa: ANN001, N807
        counts = _CALLS.get(self)
        if counts is not None:
            counts[0] += 1
            counts[1] += _grad_enabled()
        return call(self, *args, **kwargs)

    __init__._guarddiag = True  # type: ignore[attr-defined]
    cls.__init__, cls.__call__ = __init__, __call__


def _grad_enabled() -> int:
    torch = sys.modules.get("torch")
    return int(bool(torch is not None and torch.is_grad_enabled()))


class _LateHook:
    """One registration on a compiled module after torch compiled something, and what followed."""

    def __init__(self, kind: str, module: object, path: str, root: object) -> None:
        self.pid = os.getpid()
        self.kind = kind
        self.module = type(module).__name__
        self.path = path
        self.compiled = type(getattr(root, "_orig_mod", root)).__name__
        self.file, self.line = _caller()
        self.counts = _CALLS.setdefault(root, [0, 0])
        self.base = list(self.counts)
        self.ran = 0
        self.traced = 0

    def on_run(self) -> None:
        self.ran += 1

    def on_trace(self, ctx: object) -> None:  # noqa: ARG002 - Dynamo's compile-time context
        self.traced += 1

    def fact(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "kind": self.kind,
            "module": self.module,
            "path": self.path,
            "compiled": self.compiled,
            "file": self.file,
            "line": self.line,
            "calls": self.counts[0] - self.base[0],
            "grad_calls": self.counts[1] - self.base[1],
            "ran": self.ran,
            "traced": self.traced,
        }


def _observed(module: object, hook, kind: str):  # noqa: ANN001, ANN202
    """``hook``, or a wrapper counting its runs when it goes on a compiled module after a compile."""
    if not _COMPILED or not _compiled_yet():
        return hook
    torch = sys.modules["torch"]
    if torch.compiler.is_compiling():
        return hook
    for root in list(_COMPILED):
        path = _path_in(getattr(root, "_orig_mod", None), module)
        if path is not None:
            break
    else:
        return hook
    from torch._dynamo.comptime import comptime
    from torch._dynamo.eval_frame import skip_code

    record = _LateHook(kind, module, path, root)
    _RECORDS.append(record)
    on_trace, on_run = _traced(record.on_trace), record.on_run

    @functools.wraps(hook)
    def counted(*args, **kwargs):  # noqa: ANN001, ANN202
        # Eagerly it calls on_run; Dynamo tracing this wrapper calls on_trace once, at compile time.
        comptime(on_trace, on_run)
        return hook(*args, **kwargs)

    skip_code(counted.__code__)  # Dynamo inlines it into the caller's frame, never compiles it alone
    return counted


def _traced(on_trace):  # noqa: ANN001, ANN202
    """A plain function for Dynamo's comptime, made before tracing (it drops a bound method's receiver
    and refuses a closure made while tracing)."""

    def traced(ctx):  # noqa: ANN001, ANN202
        on_trace(ctx)

    return traced


def _compiled_yet() -> bool:
    """torch recorded a compile in this process (its compilation metrics, kept across resets)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return bool(getattr(utils, "_compilation_metrics", None))


def _path_in(root: object, module: object) -> str | None:
    """``module``'s name under ``root`` (``""``: root itself), None when it is not part of it."""
    named = getattr(root, "named_modules", None)
    if named is None:
        return None
    for name, sub in named(remove_duplicate=False):
        if sub is module:
            return name
    return None


def _caller() -> tuple[str, int | None]:
    """The first frame outside torch and guarddiag's child files: where the script registered the hook."""
    torch_dir = os.path.dirname(getattr(sys.modules.get("torch"), "__file__", "") or "") + os.sep
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not name.startswith((torch_dir, _CHILD_DIR + os.sep)) and not name.startswith("<frozen"):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "", None


def _write() -> None:
    mine = [r.fact() for r in _RECORDS if r.pid == os.getpid()]
    if not mine:
        return
    try:
        with open(os.path.join(str(_STATE["folder"]), HOOKS_NAME), "a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(f) + "\n" for f in mine))
    except OSError:
        pass  # the script removed its run folder
