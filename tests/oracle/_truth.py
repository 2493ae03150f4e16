"""torch's own account of a run of one oracle script: what each compiled function cost.

Imported by every ``tests/oracle/pt_*.py`` script (``import _truth``) before it compiles anything, and
called last (``_truth.write()``).

On import it makes torch keep every compilation-metrics record: torch keeps them in a deque of 64
(``torch._dynamo.utils._compilation_metrics``); this module swaps that deque for a subclass of its
class (guarddiag's run wraps it too, and that wrapper must keep working) whose ``append`` also records
into ``RECORDS`` (a plain list, never trimmed, and not emptied by ``torch._dynamo.reset()``). Where a
torch has no such deque it raises the limit instead, and ``write()`` also reads what torch still holds.

``write()`` writes JSON to the path in ``GUARDDIAG_ORACLE_TRUTH`` (and does nothing when that is
unset). Per compiled function, keyed by ``(co_name, co_filename, co_firstlineno)``:

* ``ok``: records with ``co_name`` set and no ``fail_type`` (a frame torch compiled);
* ``failed``: records with ``co_name`` set and a ``fail_type`` (a compile that raised);
* ``refused``: records without ``co_name`` that say the recompile limit was hit (torch 2.13:
  ``fail_type`` ``Unsupported`` with ``fail_reason`` ``Dynamo recompile limit exceeded ...``, or
  ``fail_type`` ``FailOnRecompileLimitHit``, ``Hard failure due to fail_on_recompile_limit_hit`` /
  ``... fullgraph=True``): attempts refused at the limit. Such a record names no function; it belongs
  to the most recent earlier record with a ``co_name`` and the same frame id (the ``0`` of ``0/2``).
  ``torch._dynamo.reset()`` numbers frames from 0 again, so "most recent" is what keeps this right;
* ``compiles``: its distinct compiles (``0/3`` and its restart ``0/3_1`` are one), what guarddiag counts;
* ``without_guarded_code``: its records torch marks as having installed no guarded code;
* ``compile_ids``: the compile ids of the function's own records (ok and failed), in order;
  ``refused_ids``: those of its refused attempts;
* ``recompile_reasons``: torch's own reason for each of its recompiles (``recompile_reason`` of the record,
  the first failing guard torch names), in order.

Records without ``co_name`` that are not limit refusals (backward / compiled-autograd entries) are
only counted under ``ignored``.

``tests/fixtures/torch_truth.py`` runs any script under this module (scenarios, recorded fixtures, the
tests' own scripts), so there is one account of torch's counts for every test.

With ``GUARDDIAG_CORPUS_BACKEND`` set (``eager``), ``torch.compile`` called without a backend uses that
one: the corpus scripts are written for inductor, and the fast form of their tests runs them eagerly.
"""

from __future__ import annotations

import collections
import json
import os
import re

import torch._dynamo.utils as _utils

RECORDS: list = []


def _recording(base: type) -> type:
    """A subclass of ``base`` (torch's deque, or whatever deque subclass already wraps it: guarddiag's
    run hooks its own in, and it must keep working) whose ``append`` also keeps the record."""

    class RecordingDeque(base):
        def append(self, item):
            RECORDS.append(item)
            super().append(item)

    return RecordingDeque


def _install() -> str:
    current = getattr(_utils, "_compilation_metrics", None)
    if isinstance(current, collections.deque):
        RECORDS.extend(current)  # anything compiled before this import
        try:
            replacement = _recording(type(current))(current, maxlen=current.maxlen)
        except TypeError:  # a wrapper with a constructor of its own: wrap torch's plain deque instead
            replacement = _recording(collections.deque)(current, maxlen=current.maxlen)
        _utils._compilation_metrics = replacement
        return "deque"
    if hasattr(_utils, "set_compilation_metrics_limit"):
        _utils.set_compilation_metrics_limit(1_000_000)
        return "limit"
    if not hasattr(_utils, "get_compilation_metrics"):
        return _install_legacy()
    return "none"


def _install_legacy() -> str:
    """torch 2.1 keeps no metrics: it only hands each record to ``log_compilation_event``, without its compile id."""
    import contextlib

    from torch._dynamo import convert_frame

    original = convert_frame.log_compilation_event

    def hook(metrics):
        from torch._guards import CompileContext

        cid = None
        with contextlib.suppress(Exception):
            cid = CompileContext.current_compile_id()
        with contextlib.suppress(Exception):
            object.__setattr__(metrics, "compile_id", str(cid) if cid is not None else None)
        RECORDS.append(metrics)
        return original(metrics)

    convert_frame.log_compilation_event = hook
    return "legacy"


_MODE = _install()


def _default_backend(backend: str) -> None:
    """``torch.compile`` without a ``backend`` gets ``backend`` (every spelling: bare decorator, called, on a module)."""
    import torch

    compile_ = torch.compile

    def compile_with(model=None, **kwargs):
        kwargs.setdefault("backend", backend)
        return compile_(model, **kwargs)

    torch.compile = compile_with


if os.environ.get("GUARDDIAG_CORPUS_BACKEND"):
    _default_backend(os.environ["GUARDDIAG_CORPUS_BACKEND"])


def _all_records() -> list:
    """RECORDS, plus whatever torch still holds that did not pass through our deque (it was replaced)."""
    seen = {id(r) for r in RECORDS}
    extra = []
    getter = getattr(_utils, "get_compilation_metrics", None)
    if getter is not None:
        extra = [r for r in getter() if id(r) not in seen]
    if not extra:
        return list(RECORDS)
    return sorted([*RECORDS, *extra], key=lambda r: getattr(r, "start_time_us", None) or 0)


def _frame_id(compile_id) -> str | None:
    """'2/1' -> '2'; '2/1_1' (a restart) -> '2'; '!0/1/0' (compiled autograd) -> '!0'."""
    if compile_id is None:
        return None
    found = re.search(r"(!?\d+)/\d+", str(compile_id))
    return found.group(1) if found else None


def _frame_compile(compile_id: str | None) -> str | None:
    """'0/3' -> '0/3'; '0/3_1' (a restart attempt of that compile) -> '0/3'."""
    if compile_id is None:
        return None
    found = re.search(r"(!?\d+)/(\d+)", compile_id)
    return f"{found.group(1)}/{found.group(2)}" if found else compile_id


def is_limit_refusal(record) -> bool:
    """A record torch writes when it refuses to compile because a recompile limit was hit."""
    fail_type = getattr(record, "fail_type", None) or ""
    reason = getattr(record, "fail_reason", None) or ""
    if fail_type == "FailOnRecompileLimitHit":
        return True
    return "recompile limit exceeded" in reason.lower()


def summary() -> dict:
    functions: dict[tuple, dict] = {}
    last_by_frame: dict[str | None, tuple] = {}
    unattributed: list[str | None] = []
    ignored = 0
    for record in _all_records():
        compile_id = getattr(record, "compile_id", None)
        compile_id = None if compile_id is None else str(compile_id)
        frame = _frame_id(compile_id)
        name = getattr(record, "co_name", None)
        if name is not None:
            key = (name, getattr(record, "co_filename", None), getattr(record, "co_firstlineno", None))
            entry = functions.setdefault(
                key,
                {"co_name": key[0], "co_filename": key[1], "co_firstlineno": key[2],
                 "ok": 0, "failed": 0, "refused": 0, "compile_ids": [], "refused_ids": [], "fail_types": [],
                 "recompile_reasons": [], "compiles": 0, "without_guarded_code": 0, "_distinct": set()},
            )
            entry["compile_ids"].append(compile_id)
            # torch 2.1 names no compile id: each record is a compile of its own.
            distinct = _frame_compile(compile_id) or f"?/{len(entry['compile_ids'])}"
            if distinct not in entry["_distinct"]:
                entry["_distinct"].add(distinct)
                entry["compiles"] += 1
            if getattr(record, "has_guarded_code", True) is False:
                entry["without_guarded_code"] += 1
            if getattr(record, "recompile_reason", None):
                entry["recompile_reasons"].append(record.recompile_reason)
            if getattr(record, "fail_type", None):
                entry["failed"] += 1
                entry["fail_types"].append(record.fail_type)
            else:
                entry["ok"] += 1
            last_by_frame[frame] = key
        elif is_limit_refusal(record):
            key = last_by_frame.get(frame)
            if key is None:
                unattributed.append(compile_id)
            else:
                functions[key]["refused"] += 1
                functions[key]["refused_ids"].append(compile_id)
        else:
            ignored += 1
    listed = [{k: v for k, v in f.items() if k != "_distinct"} for f in functions.values()]
    return {
        "torch_version": torch_version(),
        "mode": _MODE,
        "records": len(_all_records()),
        "functions": listed,
        "totals": {
            "ok": sum(f["ok"] for f in listed),
            "failed": sum(f["failed"] for f in listed),
            "refused": sum(f["refused"] for f in listed),
            "compiles": sum(f["compiles"] for f in listed),
        },
        "unattributed_refusals": unattributed,
        "ignored": ignored,
    }


def torch_version() -> str:
    import torch

    return torch.__version__


def write() -> None:
    """Write ``summary()`` as JSON to $GUARDDIAG_ORACLE_TRUTH; nothing when it is unset."""
    path = os.environ.get("GUARDDIAG_ORACLE_TRUTH")
    if not path:
        return
    text = json.dumps(summary(), indent=2, sort_keys=True) + "\n"
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
