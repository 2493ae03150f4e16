"""LogParser.parse takes guard-tree lines of an open listing without reading them line by line
(skips the kinds a counting parser does not keep, hands the kept ones straight to the listing).
It must produce exactly the events of feeding every line through ``feed``, on every real log."""

from __future__ import annotations

from pathlib import Path

import pytest

from guarddiag.guardkinds import PINNING_KINDS
from guarddiag.logparse.events import GuardListing
from guarddiag.logparse.parser import LogParser
from tests.conftest import LOGS

REAL = sorted(LOGS.glob("torch-*/*.log")) + sorted(LOGS.glob("handmade/*.log"))


def _lines(path: Path) -> list[str]:
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        return list(fh)


def _line_by_line(lines: list[str], keep: frozenset[str] | None) -> tuple[list, object]:
    parser = LogParser(keep_guards=keep)
    events = [e for line in lines for e in parser.feed(line)] + parser.finish()
    return events, parser.counters


@pytest.mark.parametrize("keep", [PINNING_KINDS, None], ids=["counting", "all-guards"])
@pytest.mark.parametrize("log", REAL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_hot_path_gives_the_events_of_feeding_each_line(log: Path, keep):
    lines = _lines(log)
    parser = LogParser(keep_guards=keep)
    fast = list(parser.parse(lines))
    slow, counters = _line_by_line(lines, keep)
    assert fast == slow
    assert parser.counters == counters


# A flat guard (torch 2.1) whose expression holds "+- " is not a tree line: the hot path must leave it
# to feed, which keeps it as the guard it is (found by review; it had dropped or invented a guard).
_P21 = "[2026-11-30 09:30:52,452] [0/0] torch._dynamo.guards.__guards: [DEBUG] "


@pytest.mark.parametrize("expr", ["L['sep'] == ' +- '", "L['sep'] == ' +- TYPE_MATCH: '"])
@pytest.mark.parametrize("keep", [PINNING_KINDS, None], ids=["counting", "all-guards"])
def test_plus_minus_inside_a_flat_guard_is_not_a_tree_line(expr, keep):
    lines = [_P21 + "GUARDS:\n", _P21 + expr + "   # s = x + SEP  # main/s.py:23 in f\n"]
    parser = LogParser(keep_guards=keep)
    fast = list(parser.parse(lines))
    assert fast == _line_by_line(lines, keep)[0]
    (listing,) = [e for e in fast if isinstance(e, GuardListing)]
    assert listing.raw == () and [(g.kind, g.expr) for g in listing.guards] == [("EQUALS_MATCH", expr)]
