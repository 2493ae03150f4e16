"""guarddiag.watch with real torch.compile (backend="eager"): counts, causes, restored logging."""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterator

import pytest
import torch
import torch._dynamo
import torch._logging._internal as torch_logging

from guarddiag.inprocess import WatchError, watch

pytestmark = pytest.mark.torch


def _compile_keys_since(before: list[object]) -> set[str]:
    """Distinct ``frame/compile`` ids torch's own metrics recorded after ``before`` was taken."""
    keys = set()
    for m in torch._dynamo.utils.get_compilation_metrics():
        if not any(m is b for b in before):
            keys.add(str(m.compile_id).partition("_")[0])
    return keys


def _logging_state() -> tuple[object, ...]:
    """Everything the watch changes: the log state object, its contents, and each torch logger's setup."""
    registry = torch_logging.log_registry
    names = sorted(registry.get_log_qnames() | registry.get_artifact_log_qnames() | registry.get_child_log_qnames())
    loggers = {q: (logging.getLogger(q).level, logging.getLogger(q).propagate, list(logging.getLogger(q).handlers)) for q in names}
    state = torch_logging.log_state
    return state, sorted(state.artifact_names), dict(state.log_qname_to_level), loggers


@contextlib.contextmanager
def _torch_console() -> Iterator[io.StringIO]:
    """What torch's own console handlers print meanwhile (they hold the stream of import time, out of capfd's reach)."""
    sink = io.StringIO()
    handlers = [
        h for q in torch_logging.log_registry.get_log_qnames() for h in logging.getLogger(q).handlers
        if torch_logging._is_torch_handler(h) and isinstance(h, logging.StreamHandler)
    ]
    streams = [h.stream for h in handlers]
    for h in handlers:
        h.setStream(sink)
    try:
        yield sink
    finally:
        for h, stream in zip(handlers, streams, strict=True):
            h.setStream(stream)


def test_counts_equal_torch_compilation_metrics() -> None:
    @torch.compile(backend="eager")
    def scale(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    before = list(torch._dynamo.utils.get_compilation_metrics())
    with watch() as w:
        for n in range(4):
            scale(torch.ones(3), n)
    truth = _compile_keys_since(before)
    assert w.compiles == len(truth) >= 2
    assert w.recompiles == sum(1 for key in truth if not key.endswith("/0")) >= 1
    assert [f.name for f in w.functions] == ["scale"]
    assert {c.category for c in w.causes} == {"value"}
    assert w.run.source == "watch" and w.run.parse.unrecognized == 0


def test_no_recompile_counts_zero() -> None:
    @torch.compile(backend="eager")
    def add(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    with watch() as w:
        add(torch.ones(3))
        add(torch.zeros(3))
    assert (w.compiles, w.recompiles, w.causes) == (1, 0, [])
    assert w.report().endswith("no recompiles")


def test_function_compiled_before_the_block_counts_only_its_recompile() -> None:
    @torch.compile(backend="eager")
    def shift(x: torch.Tensor, n: int) -> torch.Tensor:
        return x + n

    shift(torch.ones(2), 0)
    with watch() as w:
        shift(torch.ones(2), 1)
    assert (w.compiles, w.recompiles) == (1, 1)
    # The run record counts like `guarddiag run`: from the frame's first compile id, which came before the block.
    assert w.run.compiles == 2
    assert "shift" in w.report() and "1x value" in w.report()


def test_logging_restored_and_torch_prints_nothing(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    @torch.compile(backend="eager")
    def mul(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    mine = logging.NullHandler()
    logging.getLogger("torch._dynamo").addHandler(mine)
    try:
        before = _logging_state()
        with _torch_console() as console, watch() as w:
            for n in range(3):
                mul(torch.ones(2), n)
            assert mine in logging.getLogger("torch._dynamo").handlers, "a user's handler must stay attached"
        after = _logging_state()
    finally:
        logging.getLogger("torch._dynamo").removeHandler(mine)
    assert w.recompiles >= 1
    assert after == before
    assert after[0] is before[0], "torch's log state object itself is put back"
    assert console.getvalue() == ""
    # pytest's own log capture (attached to torch's loggers since pytest 9) gets none of the records the watch enabled.
    assert not [r for r in caplog.records if r.name.startswith("torch._dynamo") and r.levelno < logging.WARNING]
    assert capfd.readouterr() == ("", "")


def test_recompile_limit_hit_counted_and_torch_warning_still_printed() -> None:
    @torch.compile(backend="eager", dynamic=False)
    def pick(x: torch.Tensor, n: int) -> torch.Tensor:
        return x + n

    with _torch_console() as console, torch._dynamo.config.patch(recompile_limit=2, automatic_dynamic_shapes=False), \
            watch() as w:
        for n in range(4):
            pick(torch.ones(2), n)
    assert w.limit_hits == 1
    assert w.recompiles == 1
    assert "hit recompile_limit (2)" in w.report()
    printed = console.getvalue()
    assert "hit config.recompile_limit (2)" in printed, "torch's own warning is printed as without a watch"
    assert "GUARDS:" not in printed and "Recompiling function" not in printed


def test_compile_in_another_thread_is_seen() -> None:
    @torch.compile(backend="eager")
    def sub(x: torch.Tensor, n: int) -> torch.Tensor:
        return x - n

    with watch() as w:
        worker = threading.Thread(target=lambda: [sub(torch.ones(2), n) for n in range(3)])
        worker.start()
        worker.join()
    assert (w.compiles, w.recompiles) == (2, 1)


def test_functions_restricts_counting() -> None:
    @torch.compile(backend="eager")
    def noisy(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    @torch.compile(backend="eager")
    def quiet(x: torch.Tensor) -> torch.Tensor:
        return x + 2

    with watch(functions=("quiet",)) as w:
        for n in range(3):
            noisy(torch.ones(2), n)
            quiet(torch.ones(2))
    assert (w.compiles, w.recompiles) == (1, 0)
    assert [f.name for f in w.functions] == ["quiet"]
    assert {f.name for f in w.run.functions} == {"noisy", "quiet"}


def test_results_readable_inside_block_and_nested_watches_both_count() -> None:
    @torch.compile(backend="eager")
    def div(x: torch.Tensor, n: int) -> torch.Tensor:
        return x / (n + 1)

    before = _logging_state()
    with watch() as outer:
        div(torch.ones(2), 0)
        assert outer.compiles == 1
        with watch() as inner:
            div(torch.ones(2), 1)
        assert (inner.compiles, inner.recompiles) == (1, 1)
        assert outer.recompiles == 1
    assert (outer.compiles, outer.recompiles) == (2, 1)
    assert _logging_state() == before


def test_graph_break_counted() -> None:
    @torch.compile(backend="eager")
    def broken(x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2

    with watch() as w:
        broken(torch.ones(2))
    assert w.graph_breaks >= 1


def test_a_watch_is_used_once() -> None:
    w = watch()
    with w:
        pass
    with pytest.raises(WatchError, match="create a new one"), w:
        pass


def test_top_level_api_is_the_same_watch():
    import guarddiag

    @torch.compile(backend="eager")
    def scaled(x, k):
        return x * k

    with guarddiag.watch() as w:
        scaled(torch.ones(2), 2)
        scaled(torch.ones(3, 3), 2)
    assert isinstance(w, guarddiag.Watch)
    assert w.compiles == 2 and w.recompiles == 1
    assert {c.category for c in w.causes} == {"tensor"}
