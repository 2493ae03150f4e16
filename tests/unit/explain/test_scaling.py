"""explain stays linear in the guard listing (issue 18), checked by counting, never by timing.

A synthetic listing of ``n`` objects of every kind a row asks about the others for (type-checked
submodules and a dict read at keys, ids of globals printed without a type as old torch does,
``.training`` pinned by id, tensors related by shape) goes through :func:`objects_of` while the
listing's map of objects and each object's list of facts count every item visited. Doubling
``n`` must about double the count: a row that scans every other object (the
``s.startswith(src + "[")`` comprehension of the issue) quadruples it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from guarddiag.explain import objects as explain_objects
from guarddiag.explain import objects_of
from guarddiag.ids import CompileId
from guarddiag.logparse.events import GuardListing
from guarddiag.logparse.guards import location_of
from guarddiag.logparse.parser import LogParser
from guarddiag.model import Guard
from guarddiag.render import explain_words
from guarddiag.render.explain_words import ObjectWords, object_words
from tests.conftest import LOGS

N = 150  # objects per family; the test runs N and 2N


class _Visits:
    count = 0


class _CountingFacts(list):  # type: ignore[type-arg]
    """A node's facts, counting the items iterated or compared."""

    visits: _Visits

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            self.visits.count += 1
            yield item

    def __contains__(self, wanted: object) -> bool:
        for item in super().__iter__():
            self.visits.count += 1
            if item is wanted or item == wanted:
                return True
        return False


class _CountingNodes(dict):  # type: ignore[type-arg]
    """A listing's objects by source, counting the items iterated."""

    visits: _Visits

    def _count(self, it: Iterator[Any]) -> Iterator[Any]:
        for item in it:
            self.visits.count += 1
            yield item

    def __iter__(self) -> Iterator[Any]:
        return self._count(super().__iter__())

    def keys(self) -> Iterator[Any]:  # type: ignore[override]
        return self._count(iter(super().keys()))

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return self._count(iter(super().values()))

    def items(self) -> Iterator[Any]:  # type: ignore[override]
        return self._count(iter(super().items()))


def _listing(n: int) -> list[Guard]:
    blocks = "L['self']._modules['blocks']"
    guards = [
        Guard("TYPE_MATCH", "L['self']", "___check_type_id(L['self'], 11), type=<class 'model.Stack'>"),
        Guard("TYPE_MATCH", "L['d']", "___check_type_id(L['d'], 12), type=<class 'dict'>"),
        Guard("TENSOR_MATCH", "L['x']", _tensor("L['x']", "None, 8")),
    ]
    for i in range(n):
        sub = f"{blocks}._modules['{i}']"
        guards += [
            Guard("TYPE_MATCH", sub, f"___check_type_id({sub}, 13), type=<class 'model.Block'>"),
            Guard("TENSOR_MATCH", f"{sub}._parameters['weight']", _tensor(f"{sub}._parameters['weight']", "8, 8")),
            Guard("EQUALS_MATCH", f"{sub}.index", f"{sub}.index == {i}"),
            Guard("TENSOR_MATCH", f"L['d']['k{i}']", _tensor(f"L['d']['k{i}']", "8")),
            # Old torch: ids without a type, the bools found through `.training`.
            Guard("ID_MATCH", f"G['mod{i}']", f"___check_obj_id(G['mod{i}'], {1000 + i})"),
            Guard("ID_MATCH", f"G['net{i}'].training", f"___check_obj_id(G['net{i}'].training, 7)"),
            # A tensor whose first dim equals x's: the relation is attached to x as well.
            Guard("TENSOR_MATCH", f"L['y{i}']", _tensor(f"L['y{i}']", "None")),
            Guard("LAMBDA_GUARD", "", f"L['y{i}'].size()[0] == L['x'].size()[0]"),
        ]
    return guards


def _tensor(src: str, size: str) -> str:
    return (
        f"check_tensor({src}, Tensor, DispatchKeySet(CPU), torch.float32, device=None, "
        f"requires_grad=False, size=[{size}], stride=[1])"
    )


def _visits_of_objects_of(n: int, full: bool, monkeypatch: pytest.MonkeyPatch) -> int:
    visits = _Visits()
    real = explain_objects._nodes

    def counting(*args: Any, **kwargs: Any) -> Any:
        nodes, ambient = real(*args, **kwargs)
        for node in nodes.values():
            facts = _CountingFacts(node.facts)
            facts.visits = visits
            node.facts = facts
        counted = _CountingNodes(nodes)
        counted.visits = visits
        return counted, ambient

    monkeypatch.setattr(explain_objects, "_nodes", counting)
    rows, _ = objects_of(_listing(n), {"self": "argument", "d": "argument", "x": "argument"}, full)
    assert rows  # the listing was read: one row per object or family
    return visits.count


@pytest.mark.parametrize("full", [False, True], ids=["default", "full"])
def test_objects_of_visits_each_object_a_bounded_number_of_times(full: bool, monkeypatch: pytest.MonkeyPatch):
    small = _visits_of_objects_of(N, full, monkeypatch)
    big = _visits_of_objects_of(2 * N, full, monkeypatch)
    # Linear: twice the objects, about twice the visits (quadratic would be about 4x).
    assert big <= 2.2 * small, (small, big)
    guards = len(_listing(N))
    assert small <= 20 * guards, (small, guards)


def test_the_synthetic_listing_asks_every_question_of_the_index():
    """The listing above reaches each whole-listing question a row can ask (else the count proves nothing)."""
    rows, _ = objects_of(_listing(4), {"self": "argument", "d": "argument", "x": "argument"}, full=True)
    by_name = {words.name: words for words in map(object_words, rows)}
    assert any("only read at key 'k0', 'k1', 'k2', 'k3'" in s for s in by_name["argument `d` (dict)"].no_recompile)
    assert by_name["`net0.training`"].detail == "value True/False (checked by id)"
    assert by_name["global `mod0`"].how == "identity"
    assert any("x.size(0)" in s for s in by_name["argument `x`"].recompiles)


class _CountingRows(tuple):  # type: ignore[type-arg]
    visits: _Visits

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            self.visits.count += 1
            yield item


def _visits_of_differences(n: int) -> int:
    visits = _Visits()

    def rows(prefix: str) -> _CountingRows:
        out = _CountingRows(ObjectWords(f"`{prefix}{i}`", "value", f"value {i}", pinned=str(i)) for i in range(n))
        out.visits = visits
        return out

    differs = explain_words._differences(rows("a"), rows("b"))
    assert len(differs) == 2 * n  # n new objects, n gone
    return visits.count


def test_differences_between_entries_are_linear():
    small, big = _visits_of_differences(N), _visits_of_differences(2 * N)
    assert big <= 2.2 * small, (small, big)


def _listings(parser: LogParser, lines: list[str], whole: bool) -> list[tuple[CompileId | None, tuple[Guard, ...]]]:
    # Line by line: every line through the blocks, none on the parse hot path.
    events = list(parser.parse(lines)) if whole else [e for line in lines for e in parser.feed(line)] + parser.finish()
    return [(e.compile_id, e.guards) for e in events if isinstance(e, GuardListing)]


@pytest.mark.parametrize("log", sorted(p.name for p in (LOGS / "torch-2.13.0").glob("*.log")))
def test_a_listing_read_whole_is_the_listing_read_line_by_line(log: str):
    """explain's fast read (issue 18): tree lines on the parse hot path, each guard line read once
    across listings, locations unread (each comment kept as it is, read only where a wrapper's callable
    is wanted); the same guards as the line-by-line read, locations aside."""
    lines = (LOGS / "torch-2.13.0" / log).read_text(encoding="utf-8").splitlines(keepends=True)
    slow = _listings(LogParser(), lines, whole=False)
    assert _listings(LogParser(), lines, whole=True) == slow
    fast = _listings(LogParser(locations=False), lines, whole=True)
    unlocated = [(cid, tuple(Guard(g.kind, g.source, g.expr) for g in guards)) for cid, guards in slow]
    assert [(cid, tuple(Guard(g.kind, g.source, g.expr) for g in guards)) for cid, guards in fast] == unlocated
    assert [[location_of(g.comment) for g in guards] for _, guards in fast] == [[g.location for g in guards] for _, guards in slow]
    if any(g.location for _, guards in slow for g in guards):
        assert not any(g.location for _, guards in fast for g in guards)  # the locations were there to leave unread
