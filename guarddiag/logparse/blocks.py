"""One reader (a *block*) per multi-line record kind: guard listings, recompile announcements,
recompile-limit warnings, graph breaks. The parser (:mod:`guarddiag.logparse.parser`) opens a block
on a record's first line and feeds it the lines that follow; ``close`` gives the record's events.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from guarddiag.ids import CACHE_ENTRY, CompileId, Process
from guarddiag.logparse.events import (
    Event,
    GraphBreakSeen,
    GuardFailure,
    GuardListing,
    LimitWarning,
    RecompileAnnounced,
    StackFrame,
)
from guarddiag.logparse.guards import TreeReader

# torch's spellings of the messages read here, as pattern fragments: the compiled patterns below
# and the paste reader's (guarddiag.logparse.paste, which finds them mid-line or cut) are built from them.
# The *_TEXT ones are plain words (no regex specials), also for str.startswith.
RECOMPILING_TEXT = "Recompiling function "
# A function's name as torch prints it: ``<lambda>``, ``<module>``, or a word.
FUNCTION_NAME = r"(?:<[^>]+>|\S+)"
# torch 2.1 logs the recompile message as the repr of a tuple of its lines: this opens its first item.
TUPLE_START = r"""\(['"]"""
TRIGGERED_TEXT = "triggered by the following guard failure"  # "... failure:" or "... failure(s):"
GUARD_COUNT = r"guard \d+ failures:"
STACK_TEXT = "User stack trace:"
# One frame of it, as traceback prints frames: ``File "task_heads.py", line 16, in forward``.
STACK_FRAME = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)$')
LIMIT_TEXT = "torch._dynamo hit config."
LIMIT_SIZE = r"(?P<limit>\w+) \((?P<value>\d+)\)"
LIMIT_FUNCTION_TEXT = "function: '"
LIMIT_FUNCTION_NAME = rf"{LIMIT_FUNCTION_TEXT}(?P<name>[^']+)'"
LIMIT_REASON_TEXT = r"(?:last reason|reasons):\s*(?:reasons:\s*)?(?P<reason>.*)$"
LIMIT_ADVICE = r"to (?:log all|diagnose) recompilation"  # "To log all recompilation reasons, use ..."

RECOMPILING_TUPLE = re.compile(rf"^{TUPLE_START}{RECOMPILING_TEXT}")
RECOMPILING = re.compile(rf"^{RECOMPILING_TEXT}(?P<name>{FUNCTION_NAME}) in (?P<file>.+?):(?P<line>\d+)\s*$")
_GUARD_COUNT = re.compile(GUARD_COUNT)
LIMIT = re.compile(re.escape(LIMIT_TEXT) + LIMIT_SIZE)
_LIMIT_FUNCTION = re.compile(rf"^\s*{LIMIT_FUNCTION_NAME} \((?P<file>.+?):(?P<line>\d+)\)")
LIMIT_REASON = re.compile(rf"^\s*{LIMIT_REASON_TEXT}")
_LIMIT_TRAILER = re.compile(rf"^\s*(?:{LIMIT_ADVICE}|{STACK_TEXT})", re.IGNORECASE)
# The limit warning's own words for the call it refused: a log that begins below the warning's first
# line (a paste, a cut log) still shows the hit by them.
LIMIT_TAIL = re.compile(r"^\s*last reason:")
_FAILURE = re.compile(rf"^\s*- (?:(?P<ce>{CACHE_ENTRY}): )?(?P<text>.*)$")
# Lines torch adds under a recompile's reasons that are advice, not reasons.
_ADVICE = re.compile(r"^The following environment variable would enable dynamic compilation")
GRAPH_BREAK = re.compile(r"^Graph break")
_LINE_NUMBER = re.compile(r":\d+")
_GB_REASON = re.compile(r"^\s*(?:Graph Break Reason|Reason): (?P<reason>.*)$")
# torch 2.2-2.5 end a graph break's traceback with its exception: ``torch._dynamo.exc.Unsupported: builtin: print``.
_GB_EXCEPTION = re.compile(r"^torch\._dynamo\.exc\.\w+: (?P<reason>.+)$")
# A warning that names a graph break ahead of torch's record of it: ``Graph break from `Tensor.item()`, consider setting:``.
_GB_WARNING = re.compile(r"^Graph break from `(?P<what>[^`]+)`")
_GB_USER_CODE = re.compile(r"^Graph break: from user code at")
# torch's one measurement of a listing's guards at compile time: ``Guard eval latency = 66.37 us`` in the log
# (torch >= 2.6), ``Guard latency = 66.37 us`` ending a trace's guard tree.
_LATENCY = re.compile(r"^Guard (?:eval )?latency = (?P<us>\d+(?:\.\d+)?) us\s*$")
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
    def __init__(
        self, cid: CompileId | None, process: Process, keep: frozenset[str] | None, locations: bool = True, seen: dict | None = None
    ) -> None:
        self.cid, self.process = cid, process
        self.reader = TreeReader(keep, locations, seen)
        self.skippable = keep
        self.keep_raw = self.reader.keep_raw  # the hot path's one call per kept guard line
        # Every tree line, kept or not, counts where the guards are: a leaf in the tally, a manager by a call.
        owners = self.reader.owners
        self.owner_line, self.owner_manager, self.tally = owners.line, owners.manager, owners.tally
        self.tree_line = self.whole_line if keep is None else None
        self.latency_us: float | None = None
        self.done = False

    def whole_line(self, depth: int, text: str) -> None:
        """A tree line of a listing read whole, as the hot path hands it over (depth, text after ``+- ``)."""
        colon = text.find(":")
        self.owner_line(depth, text[:colon] if colon > 0 else text, text, colon)
        self.reader.tree_line(depth, text)

    def feed(self, body: str) -> bool:
        if self.done:
            return False
        text = body.strip()
        latency = _LATENCY.match(text)
        if latency is not None:
            # The listing is over (the log's next line; a trace's last): no more lines for the hot path to take.
            self.latency_us = float(latency["us"])
            self.done = True
            self.skippable = self.tree_line = None
            return True
        if text.startswith("GUARDS:") and self.reader.guards:
            return False
        return self.reader.feed(body)

    def accepts_bare(self, body: str) -> bool:
        return not self.done and bool(_BARE_GUARD.match(body))

    def close(self) -> list[Event]:
        reader = self.reader
        return [GuardListing(self.cid, tuple(reader.guards), tuple(reader.raw), self.process, self.latency_us, reader.owners.whole())]


class ShapeFnBlock(Block):
    """``Python shape guard function:`` source code: recognized, nothing kept."""

    def feed(self, body: str) -> bool:
        return not body.strip().startswith(("GUARDS:", "Guard eval latency"))


class RecompileBlock(Block):
    def __init__(self, cid: CompileId | None, process: Process, m: re.Match[str]) -> None:
        self.cid, self.process = cid, process
        self.name, self.file, self.line = m["name"], m["file"], int(m["line"])
        self.failures: list[GuardFailure] = []
        self.in_stack = False
        # The frames of the last failure's "User stack trace:" (torch >= 2.11), as read so far.
        self.stack: list[StackFrame] = []

    def feed(self, body: str) -> bool:
        if heads_reasons(body.strip()):
            return True
        m = _FAILURE.match(body)
        if m is None:
            return bool(body[:1].isspace())
        rest = m["text"]
        if _ADVICE.match(rest):
            return True  # torch's advice under the reasons (torch >= 2.8), not a guard that failed
        if rest.startswith(STACK_TEXT):
            self.in_stack = bool(self.failures)
            return True
        if rest[:1].isspace() or (self.in_stack and m["ce"] is None and rest.startswith("File ")):
            if self.in_stack:
                self._stack_line(rest.strip())
            return True
        self._end_stack()
        self.failures.append(GuardFailure(CompileId.parse(m["ce"]), rest))
        return True

    def _stack_line(self, text: str) -> None:
        stack_line(self.stack, text)

    def _end_stack(self) -> None:
        """The stack read belongs to the failure above it."""
        if self.in_stack and self.stack and self.failures:
            last = self.failures[-1]
            self.failures[-1] = GuardFailure(last.cache_entry, last.text, tuple(self.stack))
        self.in_stack = False
        self.stack = []

    def accepts_bare(self, body: str) -> bool:
        return body[:1].isspace()

    def close(self) -> list[Event]:
        self._end_stack()
        return [RecompileAnnounced(self.cid, self.name, self.file, self.line, tuple(self.failures), self.process)]


def stack_line(stack: list[StackFrame], text: str) -> None:
    """One line of a ``User stack trace:``: ``File "x.py", line 16, in forward`` opens a frame; the line
    under it is that frame's code."""
    frame = STACK_FRAME.match(text)
    if frame is not None:
        stack.append(StackFrame(frame["file"], int(frame["line"]), frame["function"]))
    elif stack and not stack[-1].code:
        last = stack[-1]
        stack[-1] = StackFrame(last.file, last.line, last.function, text)


# A reason's first line: the cache entry whose guard failed, then the failure as the log prints it.
_REASON = re.compile(rf"^(?:(?P<ce>{CACHE_ENTRY}): )?(?P<text>.*)$")


def reason_failure(reason: str) -> GuardFailure:
    """One cache entry's failure as torch writes a recompile reason whole (a trace's ``recompile_reasons``,
    its metrics' ``recompile_reason``): ``0/1: <guard>``, and (torch >= 2.11) a ``User stack trace:`` under it."""
    first, *rest = reason.split("\n")
    m = _REASON.match(first.strip())
    assert m is not None  # the pattern matches any line
    stack: list[StackFrame] = []
    in_stack = False
    for line in rest:
        text = line.strip()
        if text.startswith(STACK_TEXT):
            in_stack = True
        elif in_stack and text:
            stack_line(stack, text)
    return GuardFailure(CompileId.parse(m["ce"]), m["text"], tuple(stack))


class LimitBlock(Block):
    """A recompile-limit warning; ``m`` None: its first line (which names the limit) is not in the log."""

    def __init__(self, cid: CompileId | None, process: Process, m: re.Match[str] | None) -> None:
        self.cid, self.process = cid, process
        self.limit, self.value = (m["limit"], int(m["value"])) if m is not None else ("", None)
        self.name, self.file, self.line = "", "", None
        self.reason = ""

    def feed(self, body: str) -> bool:
        m = _LIMIT_FUNCTION.match(body)
        if m is not None:
            self.name, self.file, self.line = m["name"], m["file"], int(m["line"])
            return True
        m = LIMIT_REASON.match(body)
        if m is not None:
            self.reason = m["reason"].strip()
            return True
        return bool(_LIMIT_TRAILER.match(body)) or body[:1].isspace() or not body.strip()

    def accepts_bare(self, body: str) -> bool:
        return bool(_LIMIT_FUNCTION.match(body) or LIMIT_REASON.match(body) or _LIMIT_TRAILER.match(body))

    def close(self) -> list[Event]:
        return [LimitWarning(self.cid, self.limit, self.value, self.name, self.file, self.line, self.reason, self.process)]


class GraphBreakBlock(Block):
    """A graph break: where (``FILE:LINE``) and torch's reason. torch 2.6+ write ``Graph Break Reason:
    Encountered graph break when attempting to trace CALL: ...:`` and the reason itself (the graph
    break's type, ``Unsupported Tensor.item() call ...``) below it; 2.2-2.5 end the record with the
    exception (``torch._dynamo.exc.Unsupported: builtin: print ...``); 2.0-2.1 put it in the first line."""

    def __init__(self, cid: CompileId | None, process: Process, body: str, channel: bool = False) -> None:
        self.cid, self.process = cid, process
        self.channel = channel
        self.location = _graph_break_location(body)
        old = re.match(r"^Graph break: (?P<reason>.+?) from user code at", body)
        warning = _GB_WARNING.match(body)
        self.reason = old["reason"] if old else f"{warning['what']} (a warning)" if warning else ""
        self._warning = warning is not None
        # The reason line ends with a colon: the reason proper is the next line that says something,
        # and torch's explanation of it the line after.
        self._reason_below = False
        self._explained = False

    def feed(self, body: str) -> bool:
        if GRAPH_BREAK.match(body):
            # A warning's own "Graph break: from user code at:" line goes on with it.
            return self._warning and not self.location and bool(_GB_USER_CODE.match(body))
        text = body.strip()
        m = _GB_REASON.match(body)
        if m is not None and not self.reason:
            self.reason = m["reason"].strip()
            self._reason_below = self.reason.endswith(":")
        elif self._reason_below and text:
            self.reason, self._reason_below, self._explained = text, False, True
        elif self._explained and text.startswith("Explanation: "):
            # torch's explanation of the graph break's type: `print` with argument types [...]
            self.reason, self._explained = f"{self.reason}: {text.removeprefix('Explanation: ')}", False
        elif (m := _GB_EXCEPTION.match(text)) is not None and not self.reason:
            self.reason = m["reason"].strip()
        elif self.location == "" and text:
            loc = re.search(r"File \"(?P<f>[^\"]+)\", line (?P<l>\d+)", body)
            if loc:
                self.location = f"{loc['f']}:{loc['l']}"
        return True

    def accepts_bare(self, body: str) -> bool:
        return body[:1].isspace() or bool(_GB_REASON.match(body))

    def close(self) -> list[Event]:
        return [GraphBreakSeen(self.cid, self.location, self.reason, self.channel, self.process)]


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


def heads_reasons(text: str) -> bool:
    """Whether a recompile message's (stripped) line heads its reasons, or is blank: ``triggered by the
    following guard failure(s):``, ``guard 2 failures:``."""
    return not text or text.startswith(TRIGGERED_TEXT) or _GUARD_COUNT.match(text) is not None


NOT_LITERAL = object()


def python_literal(text: str) -> object:
    """The Python literal ``text`` spells (torch 2.1's tuple, torch 2.0's list of reasons), or
    :data:`NOT_LITERAL` (also for one torn, hostile, too long or too deep to read)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return NOT_LITERAL


def recompile_from_tuple(cid: CompileId | None, process: Process, body: str) -> list[Event] | None:
    """``('Recompiling function f in x.py:10', "triggered by the following guard failure: L['n'] == 1")``;
    None when the line is not such a tuple (torn, or hostile)."""
    parts = python_literal(body.strip())
    m = RECOMPILING.match(str(parts[0]).strip()) if isinstance(parts, tuple) and parts else None
    if m is None:
        return None
    failures = tuple(
        GuardFailure(None, str(p).partition(":")[2].strip() if str(p).startswith("triggered by") else str(p).strip())
        for p in parts[1:]
    )
    return [RecompileAnnounced(cid, m["name"], m["file"], int(m["line"]), failures, process)]
