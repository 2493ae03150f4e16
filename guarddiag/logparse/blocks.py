"""One reader (a *block*) per multi-line record kind: guard listings, recompile announcements,
recompile-limit warnings, graph breaks. The parser (:mod:`guarddiag.logparse.parser`) opens a block
on a record's first line and feeds it the lines that follow; ``close`` gives the record's events.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from guarddiag.ids import CACHE_ENTRY
from guarddiag.logparse.events import (
    Event,
    GraphBreakSeen,
    GuardFailure,
    GuardListing,
    LimitWarning,
    RecompileAnnounced,
)
from guarddiag.logparse.guards import TreeReader

# torch 2.1 logs the recompile message as the repr of a tuple of its lines.
RECOMPILING_TUPLE = re.compile(r"""^\(['"]Recompiling function """)
RECOMPILING = re.compile(r"^Recompiling function (?P<name><[^>]+>|\S+) in (?P<file>.+?):(?P<line>\d+)\s*$")
LIMIT = re.compile(r"torch\._dynamo hit config\.(?P<limit>\w+) \((?P<value>\d+)\)")
_LIMIT_FUNCTION = re.compile(r"^\s*function: '(?P<name>[^']+)' \((?P<file>.+?):(?P<line>\d+)\)")
_LIMIT_REASON = re.compile(r"^\s*(?:last reason|reasons):\s*(?:reasons:\s*)?(?P<reason>.*)$")
_LIMIT_TRAILER = re.compile(r"^\s*(?:to log all recompilation|to diagnose recompilation|user stack trace:)", re.IGNORECASE)
_FAILURE = re.compile(rf"^\s*- (?:(?P<ce>{CACHE_ENTRY}): )?(?P<text>.*)$")
# Lines torch adds under a recompile's reasons that are advice, not reasons.
_ADVICE = re.compile(r"^The following environment variable would enable dynamic compilation")
GRAPH_BREAK = re.compile(r"^Graph break")
_LINE_NUMBER = re.compile(r":\d+")
_GB_REASON = re.compile(r"^\s*(?:Graph Break Reason|Reason): (?P<reason>.*)$")
# Bare continuation lines of a guard listing in torch 2.0/2.1 logs.
_BARE_GUARD = re.compile(
    r"^\s*(?:\+-|\| |___|check_tensor|hasattr\(|[LG]\[|not |utils_device|len\(|isinstance|Eq\(|Ne\(|-?\d+ (?:<=|[<>=]))"
)


class Block:
    """A multi-line record being read."""

    # Guard kinds a counting parser keeps; other tree lines may be skipped unread, and kept ones
    # handed to ``keep_raw`` without the rest of the line reading (see LogParser.parse).
    skippable: frozenset[str] | None = None
    # A listing read whole: its tree lines may go straight here as (depth, text after "+- ").
    tree_line: Callable[[int, str], None] | None = None

    def keep_raw(self, label: str, rest: str) -> None:  # pragma: no cover - only blocks with skippable
        raise NotImplementedError

    def feed(self, body: str) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def accepts_bare(self, body: str) -> bool:
        return False

    def close(self) -> list[Event]:
        return []


class GuardBlock(Block):
    def __init__(self, cid: str | None, keep: frozenset[str] | None, locations: bool = True, seen: dict | None = None) -> None:
        self.cid = cid
        self.reader = TreeReader(keep, locations, seen)
        self.skippable = keep
        self.keep_raw = self.reader.keep_raw  # the hot path's one call per kept guard line
        self.tree_line = self.reader.tree_line if keep is None else None
        self.done = False

    def feed(self, body: str) -> bool:
        if self.done:
            return False
        text = body.strip()
        if text.startswith("Guard eval latency"):
            self.done = True
            self.skippable = self.tree_line = None  # the listing is over: no more lines for the hot path to take
            return True
        if text.startswith("GUARDS:") and self.reader.guards:
            return False
        return self.reader.feed(body)

    def accepts_bare(self, body: str) -> bool:
        return not self.done and bool(_BARE_GUARD.match(body))

    def close(self) -> list[Event]:
        return [GuardListing(self.cid, tuple(self.reader.guards), tuple(self.reader.raw))]


class ShapeFnBlock(Block):
    """``Python shape guard function:`` source code: recognized, nothing kept."""

    def feed(self, body: str) -> bool:
        return not body.strip().startswith(("GUARDS:", "Guard eval latency"))


class RecompileBlock(Block):
    def __init__(self, cid: str | None, m: re.Match[str]) -> None:
        self.cid = cid
        self.name, self.file, self.line = m["name"], m["file"], int(m["line"])
        self.failures: list[GuardFailure] = []
        self.in_stack = False

    def feed(self, body: str) -> bool:
        text = body.strip()
        if not text or text.startswith("triggered by the following guard failure") or re.match(r"^guard \d+ failures:", text):
            return True
        m = _FAILURE.match(body)
        if m is None:
            return bool(body[:1].isspace())
        rest = m["text"]
        if _ADVICE.match(rest):
            return True  # torch's advice under the reasons (torch >= 2.8), not a guard that failed
        if rest.startswith("User stack trace:"):
            self.in_stack = True
            return True
        if rest[:1].isspace() or (self.in_stack and m["ce"] is None and rest.startswith("File ")):
            return True
        self.in_stack = False
        self.failures.append(GuardFailure(m["ce"], rest))
        return True

    def accepts_bare(self, body: str) -> bool:
        return body[:1].isspace()

    def close(self) -> list[Event]:
        return [RecompileAnnounced(self.cid, self.name, self.file, self.line, tuple(self.failures))]


class LimitBlock(Block):
    def __init__(self, cid: str | None, m: re.Match[str]) -> None:
        self.cid = cid
        self.limit, self.value = m["limit"], int(m["value"])
        self.name, self.file, self.line = "", "", None
        self.reason = ""

    def feed(self, body: str) -> bool:
        m = _LIMIT_FUNCTION.match(body)
        if m is not None:
            self.name, self.file, self.line = m["name"], m["file"], int(m["line"])
            return True
        m = _LIMIT_REASON.match(body)
        if m is not None:
            self.reason = m["reason"].strip()
            return True
        return bool(_LIMIT_TRAILER.match(body)) or body[:1].isspace() or not body.strip()

    def accepts_bare(self, body: str) -> bool:
        return bool(_LIMIT_FUNCTION.match(body) or _LIMIT_REASON.match(body) or _LIMIT_TRAILER.match(body))

    def close(self) -> list[Event]:
        return [LimitWarning(self.cid, self.limit, self.value, self.name, self.file, self.line, self.reason)]


class GraphBreakBlock(Block):
    def __init__(self, cid: str | None, body: str) -> None:
        self.cid = cid
        self.location = _graph_break_location(body)
        old = re.match(r"^Graph break: (?P<reason>.+?) from user code at", body)
        self.reason = old["reason"] if old else ""

    def feed(self, body: str) -> bool:
        if GRAPH_BREAK.match(body):
            return False
        m = _GB_REASON.match(body)
        if m is not None and not self.reason:
            self.reason = m["reason"].strip()
        elif not self.reason and self.location == "" and body.strip():
            loc = re.search(r"File \"(?P<f>[^\"]+)\", line (?P<l>\d+)", body)
            if loc:
                self.location = f"{loc['f']}:{loc['l']}"
        return True

    def accepts_bare(self, body: str) -> bool:
        return body[:1].isspace() or bool(_GB_REASON.match(body))

    def close(self) -> list[Event]:
        return [GraphBreakSeen(self.cid, self.location, self.reason)]


def _graph_break_location(body: str) -> str:
    """``FILE:LINE`` after the first `` at `` followed by a word, up to the first ``:digits`` after it
    (what ``re.search(r" at (\\S.*?:\\d+)")`` finds, in linear time: that search was quadratic in a line
    repeating `` at a``)."""
    at = body.find(" at ")
    while at >= 0 and (at + 4 >= len(body) or body[at + 4].isspace()):
        at = body.find(" at ", at + 1)
    if at < 0:
        return ""
    end = _LINE_NUMBER.search(body, at + 5)
    return body[at + 4 : end.end()] if end else ""


def recompile_from_tuple(cid: str | None, body: str) -> list[Event] | None:
    """``('Recompiling function f in x.py:10', "triggered by the following guard failure: L['n'] == 1")``;
    None when the line is not such a tuple (torn, or hostile)."""
    try:
        parts = ast.literal_eval(body.strip())
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None
    m = RECOMPILING.match(str(parts[0]).strip()) if isinstance(parts, tuple) and parts else None
    if m is None:
        return None
    failures = tuple(
        GuardFailure(None, str(p).partition(":")[2].strip() if str(p).startswith("triggered by") else str(p).strip())
        for p in parts[1:]
    )
    return [RecompileAnnounced(cid, m["name"], m["file"], int(m["line"]), failures)]
