"""Pastes: torch's messages found by their text where the line frame is missing or mangled.

What users paste into issues, chats and notebooks went through a terminal, a browser and a
Markdown editor: torch's line prefix is gone or cut short, lines are quoted (``> ``), indented,
put in a table, wrapped at a terminal width, flattened into one line by a web form, HTML-escaped,
or share the line with a progress bar. :class:`PasteReader` undoes that, one line at a time:

1. clean a physical line: split it at ``\\r`` (progress bars), unescape HTML, drop quote markers
   and table borders;
2. re-join lines cut at the terminal width (:class:`_Rejoiner`);
3. split a line that holds several messages at the places a torch message or prefix starts
   (one linear scan, :data:`_MARKERS`);
4. strip whatever is left of torch's prefix (:func:`strip_prefix`), keeping a ``[rankN]:``;
5. recognise the message by its text and give each of its lines a neutral frame, so that
   :class:`~guarddiag.logparse.parser.LogParser` reads it with its own record readers (recompile
   blocks, the torch 2.1 tuple, limit warnings).

Compile ids are dropped on purpose: a paste shows some of torch's messages, not the log, so
counts come from the messages shown (a recompile per ``Recompiling function`` message) and not
from compile numbers. What LogParser has no reader for is turned into events here: the
``CompileProfiler`` table, guard failures shown without their ``Recompiling function`` line (a
single ``- 0/1: ...`` line, ``Guard fail reason:`` of an error), a limit warning's tail without
its first line, and the pre-2.0 ``torchdynamo hit recompilation cache limit`` one-liner.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

from guarddiag.logparse.events import Event, GuardFailure, LimitWarning, RecompileAnnounced
from guarddiag.logparse.framing import frame
from guarddiag.logparse.parser import LogParser

# Neutral frames: glog style without a compile id, one per kind of record LogParser reads.
_RECOMPILE_FRAME = "V0101 00:00:00.000000 0 paste:1] [__recompiles] "
_LIMIT_FRAME = "W0101 00:00:00.000000 0 paste:2] "

# Where a message, a part of one, or a torch prefix starts inside a line (a flattened paste).
# Every alternative is a literal or a bounded pattern: one scan of the line, no backtracking.
_MARKERS = re.compile(
    r"\(['\"]Recompiling function "
    r"|(?<!\(['\"])Recompiling function "
    r"|triggered by the following guard failure"
    r"|guard \d+ failures:"
    r"|- !?\d+(?:/\d+)+(?:_\d+)?: "
    r"|User stack trace:"
    r"|torch\._dynamo hit config\."
    r"|torchdynamo hit (?:config\.|recompilation cache limit)"
    r"|\bfunction: '"
    r"|\blast reason: "
    r"|(?<= )reasons: "
    r"|[Tt]o (?:log all|diagnose) recompilation"
    r"|Guard failed on the same frame"
    r"|Guard fail reason: "
    r"|(?:\[rank\d+\]:)?[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d{6} "
    r"|(?:\[rank\d+\]:)?\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] "
)
# Markers that end a torch 2.1 tuple message: a prefix or another message, not a part of one.
_TUPLE_ENDS = ("(", "Recompiling", "torch", "[", "V", "I", "W", "E", "D", "C", "Guard failed", "To ", "to ")
# Pieces whose tail lists items separated by " - " once the line breaks are gone.
_LISTS_ITEMS = ("triggered by the following guard failure", "User stack trace:")

# What may be left of torch's line prefix, one token at a time (each anchored, each bounded).
_RANK = re.compile(r"\[rank(\d+)\]:\s*")
_PREFIX_TOKENS = re.compile(
    r"\s+"
    r"|\[[A-Za-z_]+\d+\]:"  # torchrun --tee: [default0]:
    r"|[VIWEDC]?\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+(?= ))?"  # glog time, level and pid or thread id
    r"|[VIWEDC](?= \[)"  # the level letter alone: "W [0/8] ..."
    r"|(?:\.\.\.)?[^\s\]\[]*\.py:\d+\]"  # glog origin, maybe cut at the front: ".../guards.py:2772]"
    r"|\[!?\d+(?:/\d+)*(?:_\d+)?\]"  # compile id
    r"|\[__\w+\]"  # artifact
    r"|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?"  # a date, bracketed or not
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):(?=torch)"  # logging.basicConfig level
    r"|torch(?:dynamo)?(?:\.\w+)+: ?"  # logger name: "torch._dynamo.guards.__recompiles: "
    r"|\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]"
)
_QUOTE = re.compile(r"^(?:\s*>)+ ?")

_RECOMPILING = re.compile(r"^Recompiling function (?:<[^>]+>|\S+) in .+:\d+\s*$")
_TAGGED = re.compile(r"^- (?P<ce>!?\d+(?:/\d+)+(?:_\d+)?): (?P<text>.*)$")
_LIMIT = re.compile(r"^(?:torch\._dynamo|torchdynamo) hit config\.(?P<rest>\w+ \(\d+\).*)$")
_OLD_LIMIT = re.compile(
    r"^torchdynamo hit recompilation cache limit \((?P<value>\d+)\) for function '(?P<name>[^']+)' "
    r"\((?P<where>.+?:\d+)\)(?:, due to the following guard failures: (?P<reasons>.*))?$"
)
_LIMIT_FUNCTION = re.compile(r"^function: '(?P<name>[^']+)' \((?P<file>.+?):(?P<line>\d+)\)")
_LIMIT_REASON = re.compile(r"^(?:last reason|reasons):\s*(?:reasons:\s*)?(?P<reason>.*)$")
_LIMIT_TRAILER = re.compile(r"^(?:to log all recompilation|to diagnose recompilation)", re.IGNORECASE)
_SAME_FRAME = re.compile(r"Guard failed on the same frame it was created")
_FAIL_REASON = re.compile(r"^Guard fail reason: (?P<reason>.*)$")
# A guard-failure text shown alone, without a cache-entry tag: it must look like one.
_GUARDISH = re.compile(r"___check_|[LG]\['|^tensor '.+' \w[\w ]* mismatch|^\S+ (?:==|!=|<=|>=|<|>|is not|is) \S")
_PROFILER_HEADER = re.compile(r"^\|?\s*Function\s*\|?\s+(?:Num )?Recompiles\s*\|?\s+Recompile Reasons")
_PROFILER_ROW = re.compile(r"^'(?P<name>[^']+)' \((?P<file>[^()]*?):(?P<line>\d+)\)\s*\|?\s+(?P<count>\d+)(?:\s*\|?\s+(?P<reason>.*?))?$")
_PROFILER_RULE = re.compile(r"^[-+=|\s]+$")
_GUARD_FAIL_REPR = re.compile(r"""^GuardFail\(reason=(?P<q>['"])(?P<reason>.*?)(?P=q), orig_code=""")

_QUOTED = re.compile(r"'((?:[^'\\\n]|\\.)+)'|\"((?:[^\"\\\n]|\\.)+)\"")
# Where a glog or bracketed-date torch prefix starts, for a framed line with other output before it.
_FRAME_START = re.compile(r"(?:\[rank\d+\]:)?(?:[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d+ |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\] )")

_HTML_ESCAPE = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|gt|lt|amp|quot|apos);")

# Terminal widths below this are not taken for a wrap: too many ordinary lines share a short length.
_MIN_WRAP = 40
WINDOW = 1000  # lines read before deciding the wrap width (and whether a framed log is a wrapped paste)


@dataclass
class _State:
    """The message being read: its kind and what its lines still need."""

    kind: str = ""  # "recompile", "limit", "headless", "orphan", "profiler"
    in_stack: bool = False
    listed: bool = False  # orphan failures under a "triggered by ..." line: every "- " item is one
    name: str = ""
    file: str = ""
    line: int | None = None
    reason: str = ""
    failures: list[GuardFailure] | None = None
    profiler_rows: list[list] | None = None


class PasteReader:
    """Feed the lines of a paste, get the events of the torch messages it shows."""

    def __init__(self) -> None:
        self._parser = LogParser(keep_guards=frozenset())
        self._rejoin = _Rejoiner()
        self._state = _State()
        self._rank: int | None = None
        self.messages = 0

    def wrap_width(self) -> int:
        """The terminal width the lines read so far were cut at (0: none)."""
        return self._rejoin.width or _wrap_width(self._rejoin.window)

    def feed(self, raw: str) -> list[Event]:
        """One physical line (newline allowed); the events it completed."""
        out: list[Event] = []
        for segment in raw.rstrip("\r\n").split("\r"):
            for line in self._rejoin.feed(_clean(segment)):
                self._line(line, out)
        return out

    def finish(self) -> list[Event]:
        """The events of what is still open at the end of the paste."""
        out: list[Event] = []
        for line in self._rejoin.finish():
            self._line(line, out)
        self._end(out)
        out.extend(self._counted(self._parser.finish()))
        return out

    def _line(self, line: str, out: list[Event]) -> None:
        for piece in split_messages(line):
            rank, body = strip_prefix(piece)
            if rank is not None:
                self._rank = rank
            self._body(body.strip(), out)

    def _emit(self, frame: str, body: str, out: list[Event]) -> None:
        rank = f"[rank{self._rank}]:" if self._rank is not None else ""
        out.extend(self._counted(self._parser.feed(rank + frame + body)))

    def _counted(self, events: list[Event]) -> list[Event]:
        self.messages += sum(1 for e in events if isinstance(e, (RecompileAnnounced, LimitWarning)))
        return events

    def _event(self, event: Event, out: list[Event]) -> None:
        self.messages += 1
        out.append(event)

    def _body(self, text: str, out: list[Event]) -> None:
        state = self._state
        if state.kind and self._continues(text, out):
            return
        self._end(out)
        self._start(text, out)

    def _continues(self, text: str, out: list[Event]) -> bool:
        """Whether ``text`` belongs to the open message (then it has been handled)."""
        kind = self._state.kind
        if kind == "recompile":
            return self._recompile_line(text, out)
        if kind in ("limit", "headless"):
            return self._limit_line(text, out)
        if kind == "orphan":
            return self._orphan_line(text)
        if kind == "profiler":
            return self._profiler_line(text)
        return False

    def _start(self, text: str, out: list[Event]) -> None:
        state = self._state
        if text.startswith(("('Recompiling function ", '("Recompiling function ')):
            lines = _tuple_with_list(text)
            for line in lines or [text]:
                self._emit(_RECOMPILE_FRAME, line, out)
            state.kind = "recompile" if lines else ""
        elif text.startswith("Recompiling function "):
            if _RECOMPILING.match(text):
                state.kind = "recompile"
                self._emit(_RECOMPILE_FRAME, text, out)
        elif text.startswith("triggered by the following guard failure"):
            state.kind, state.failures, state.listed = "orphan", [], True
        elif m := _LIMIT.match(text):
            state.kind = "limit"
            self._emit(_LIMIT_FRAME, "torch._dynamo hit config." + m["rest"], out)
        elif m := _OLD_LIMIT.match(text):
            self._old_limit(m, out)
        elif m := _LIMIT_FUNCTION.match(text):
            state.kind, state.name, state.file, state.line = "headless", m["name"], m["file"], int(m["line"])
        elif text.startswith("last reason:"):
            state.kind, state.reason = "headless", _limit_reason(text)
        elif _SAME_FRAME.search(text) or text.startswith("Guard fail reason: "):
            reason = _FAIL_REASON.match(text)
            if reason is not None and reason["reason"].strip():
                self._event(RecompileAnnounced(None, "", "", None, (_failure(reason["reason"]),)), out)
        elif _PROFILER_HEADER.match(text):
            state.kind, state.profiler_rows = "profiler", []
        elif text.startswith("- ") and _orphan_failure(text) is not None:
            state.kind, state.failures = "orphan", [_orphan_failure(text)]  # type: ignore[list-item]

    def _end(self, out: list[Event]) -> None:
        state = self._state
        if state.kind == "orphan" and state.failures:
            self._event(RecompileAnnounced(None, "", "", None, tuple(state.failures)), out)
        elif state.kind == "headless":
            self._event(LimitWarning(None, "", None, state.name, state.file, state.line, state.reason), out)
        elif state.kind == "profiler":
            self._profiled(state.profiler_rows or [], out)
        self._state = _State()

    def _recompile_line(self, text: str, out: list[Event]) -> bool:
        state = self._state
        if not text or text.startswith("triggered by the following guard failure") or re.match(r"guard \d+ failures:", text):
            self._emit(_RECOMPILE_FRAME, "    " + text, out)
            return True
        if text == "-":
            return True
        if text.startswith("User stack trace:"):
            state.in_stack = True
            self._emit(_RECOMPILE_FRAME, "    - " + text, out)
            return True
        if not text.startswith("- "):
            if state.in_stack and text.startswith('File "'):  # a stack line whose "- " a web form dropped
                self._emit(_RECOMPILE_FRAME, "    -     " + text, out)
                return True
            return False
        item = text[2:].strip()
        if item.startswith("User stack trace:"):
            state.in_stack = True
        elif _TAGGED.match(text):
            state.in_stack = False
        elif state.in_stack:
            # Whitespace collapsed by a web form: re-indent the stack lines of the last reason.
            self._emit(_RECOMPILE_FRAME, "    -     " + item, out)
            return True
        self._emit(_RECOMPILE_FRAME, "    - " + _repad(item), out)
        return True

    def _limit_line(self, text: str, out: list[Event]) -> bool:
        state = self._state
        headless = state.kind == "headless"
        if m := _LIMIT_FUNCTION.match(text):
            if headless:
                if state.name:
                    return False  # the next headless warning
                state.name, state.file, state.line = m["name"], m["file"], int(m["line"])
            else:
                self._emit(_LIMIT_FRAME, "   " + text, out)
            return True
        if _LIMIT_REASON.match(text):
            if headless:
                if state.reason:
                    return False
                state.reason = _limit_reason(text)
            else:
                self._emit(_LIMIT_FRAME, "   reasons: " + _limit_reason(text), out)
            return True
        return not text or _LIMIT_TRAILER.match(text) is not None or text.startswith(("User stack trace:", "File "))

    def _orphan_line(self, text: str) -> bool:
        state = self._state
        if not text.startswith("- "):
            if text.startswith("User stack trace:"):
                state.in_stack = True
            return not text or text == "-" or state.in_stack
        item = text[2:].strip()
        if item.startswith("User stack trace:"):
            state.in_stack = True
            return True
        failure = _orphan_failure(text)
        if failure is None and state.listed and not state.in_stack:
            failure = GuardFailure(None, _repad(item))
        if failure is None:
            return state.in_stack
        if failure.cache_entry is None and state.in_stack:
            return True  # a line of the last reason's user stack
        state.in_stack = False
        assert state.failures is not None
        state.failures.append(failure)
        return True

    def _profiler_line(self, text: str) -> bool:
        rows = self._state.profiler_rows
        assert rows is not None
        cells = text.strip("|").strip()
        if not text or _PROFILER_RULE.match(text):
            return True
        if m := _PROFILER_ROW.match(cells):
            reasons = [_profiled_reason(m["reason"])] if m["reason"] else []
            rows.append([m["name"], m["file"], int(m["line"]), int(m["count"]), reasons])
            return True
        if rows and not text.startswith(("Set ", "No ")):
            reason = cells.strip("|").strip()
            if reason:
                rows[-1][4].append(_profiled_reason(reason))
            return True
        return False

    def _profiled(self, rows: list[list], out: list[Event]) -> None:
        """One recompile per count in a CompileProfiler row, each with its listed reason when there is one."""
        for name, file, line, count, reasons in rows:
            for i in range(count):
                failures = (GuardFailure(*_split_tag(reasons[i])),) if i < len(reasons) else ()
                self._event(RecompileAnnounced(None, name, file, line, failures), out)

    def _old_limit(self, m: re.Match[str], out: list[Event]) -> None:
        """Pre-2.0 torchdynamo: the whole limit warning on one line, reasons as a list of lists."""
        self._emit(_LIMIT_FRAME, f"torch._dynamo hit config.cache_size_limit ({m['value']})", out)
        self._emit(_LIMIT_FRAME, f"   function: '{m['name']}' ({m['where']})", out)
        reason = _last_listed(m["reasons"] or "")
        if reason:
            self._emit(_LIMIT_FRAME, "   reasons: " + reason, out)
        self._state.kind = "limit"


def framed_part(line: str) -> str | None:
    """The line when it is a framed torch line, or its framed tail when other output (a progress
    bar, a shell prompt, a pytest dot) was written before it on the same line; else None."""
    text = line.rstrip("\r\n")
    if _framed(text):
        return line
    if text[:1] in (" ", "\t", ">", "|"):
        return None  # quoted, indented or in a table: a paste, not output written before a log line
    for m in _FRAME_START.finditer(text):
        if m.start() and _framed(text[m.start() :]):
            return line[m.start() :]
    return None


def mangled_line(line: str, framed: bool) -> bool:
    """A line of a log that went through a browser: HTML escapes, or a framed line holding
    another torch prefix (a flattened log)."""
    return (framed and _FRAME_START.search(line, 1) is not None) or ("&" in line and _HTML_ESCAPE.search(line) is not None)


def _framed(text: str) -> bool:
    """A torch log line; the pre-2.0 ``torchdynamo`` loggers' lines are read as a paste (LogParser
    knows their frame but not their messages)."""
    framed = frame(text)
    return framed is not None and not framed.origin.startswith("torchdynamo")


def _clean(segment: str) -> str:
    """Undo what a web page and a Markdown editor did to one line: HTML escapes, quotes, table borders."""
    for _ in range(3):  # escaped again by each page it was copied through
        if "&" not in segment or ";" not in segment:
            break
        unescaped = html.unescape(segment)
        if unescaped == segment:
            break
        segment = unescaped
    if segment.lstrip().startswith(">"):
        segment = _QUOTE.sub("", segment, count=1)
    stripped = segment.strip()
    if len(stripped) > 1 and stripped[0] == "|" and stripped[-1] == "|" and not stripped.startswith("| +-"):
        segment = stripped[1:-1].strip()
    return segment


def split_messages(line: str) -> Iterator[str]:
    """The messages of a line, cut where a torch message, a part of one or a prefix starts.

    A torch 2.1 tuple (``('Recompiling function f in x.py:3', "triggered by ...")``) is one
    message: only a prefix or another message ends it."""
    start = 0
    in_tuple = False
    for m in _MARKERS.finditer(line):
        at = m.start()
        if in_tuple and not m.group().startswith(_TUPLE_ENDS):
            continue
        if at > start:
            yield from _items(line[start:at])
        start = at
        in_tuple = m.group()[0] == "("
    yield from _items(line[start:])


def _items(piece: str) -> Iterator[str]:
    piece = piece.rstrip()
    if piece.endswith(" -"):
        piece = piece[:-2].rstrip()
    if not piece.startswith(_LISTS_ITEMS) or " - " not in piece:
        yield piece
        return
    head, _, rest = piece.partition(":")
    yield head + ":"
    for item in rest.split(" - "):
        item = item.strip()
        if item:
            yield "- " + item.removeprefix("- ")


def strip_prefix(piece: str) -> tuple[int | None, str]:
    """``(rank, body)``: whatever is left of a torch prefix taken off a piece of a line."""
    rank = None
    pos = 0
    n = len(piece)
    while pos < n:
        m = _RANK.match(piece, pos)
        if m is not None:
            rank = int(m.group(1))
            pos = m.end()
            continue
        m = _PREFIX_TOKENS.match(piece, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
    return rank, piece[pos:]


class _Rejoiner:
    """Re-joins lines that a terminal cut at its width.

    The width is the longest line of the first lines read, when at least two lines have exactly
    that length; a line of that length continues on the next one unless the next one starts a
    message or a torch prefix of its own."""

    def __init__(self) -> None:
        self.window: list[str] | None = []
        self.width = 0
        self._pending = ""

    def feed(self, line: str) -> list[str]:
        if self.window is not None:
            self.window.append(line)
            if len(self.window) < WINDOW:
                return []
            return self._decide()
        return self._join(line)

    def finish(self) -> list[str]:
        out = self._decide() if self.window is not None else []
        if self._pending:
            out.append(self._pending)
            self._pending = ""
        return out

    def _decide(self) -> list[str]:
        window, self.window = self.window or [], None
        self.width = _wrap_width(window)
        out: list[str] = []
        for line in window:
            out += self._join(line)
        return out

    def _join(self, line: str) -> list[str]:
        if self._pending:
            if _starts_anew(line):
                out = [self._pending]
                self._pending = ""
            else:
                line, self._pending, out = self._pending + line, "", []
        else:
            out = []
        if self.width and len(line) % self.width == 0 and line:
            self._pending = line
            return out
        out.append(line)
        return out


def _wrap_width(window: list[str] | None) -> int:
    """The longest line's length, when it is long enough for a terminal and stands out: a terminal
    cuts every longer line there, so at least two lines have it, twice as many as lines just
    shorter (a log's own longest lines, a repeated message, are not cut at one column)."""
    lengths = [len(line) for line in window or ()]
    top = max(lengths, default=0)
    at = lengths.count(top)
    below = sum(1 for n in lengths if top - 8 <= n < top)
    return top if top >= _MIN_WRAP and at >= 2 and at >= 2 * below else 0


def _starts_anew(line: str) -> bool:
    """Whether a line is a message or a prefix of its own, not the rest of a line cut before it."""
    return _MARKERS.match(line.lstrip()) is not None


def _tuple_with_list(text: str) -> list[str]:
    """torch 2.1 with ``report_all_guard_failures``: the tuple's second item is a list of reasons; as
    the lines of a recompile block (LogParser reads the tuple as one reason), or [] for another tuple."""
    try:
        parts = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if not isinstance(parts, tuple) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
        return []
    head, _, listed = parts[1].partition(": ")
    if head != "triggered by the following guard failures" or not listed.startswith("["):
        return []
    try:
        reasons = ast.literal_eval(listed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if not _RECOMPILING.match(parts[0]) or not isinstance(reasons, list):
        return []
    return [parts[0], "    triggered by the following guard failure(s):", *(f"    - {r}" for r in reasons)]


def _failure(text: str) -> GuardFailure:
    entry, rest = _split_tag(text.strip())
    return GuardFailure(entry, _repad(rest))


def _split_tag(text: str) -> tuple[str | None, str]:
    m = _TAGGED.match("- " + text)
    return (m["ce"], m["text"]) if m else (None, text)


def _orphan_failure(text: str) -> GuardFailure | None:
    """A ``- 0/1: ...`` line, or a ``- ...`` line that reads as a guard failure."""
    m = _TAGGED.match(text)
    if m is not None:
        return GuardFailure(m["ce"], _repad(m["text"]))
    rest = text[2:].strip()
    return GuardFailure(None, _repad(rest)) if _GUARDISH.search(rest) else None


def _repad(text: str) -> str:
    """torch pads a guard before its ``  # comment``; a web form collapses that to one space."""
    if "  #" in text or " # " not in text:
        return text
    expr, _, comment = text.partition(" # ")
    return f"{expr}  # {comment}"


def _limit_reason(text: str) -> str:
    """The reason of a ``last reason:`` / ``reasons:`` line; torch 2.0 and torchdynamo print a list."""
    m = _LIMIT_REASON.match(text)
    reason = m["reason"].strip() if m else ""
    if reason.startswith("["):
        return _last_listed(reason) or reason
    return _repad(reason)


def _last_listed(text: str) -> str:
    """The newest reason of a printed list (``[['a'], ['b']]`` or ``["a", "b"]``); "" if it is no list."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        # A list cut short (a paste's excerpt): its last whole quoted item.
        items = _QUOTED.findall(text)
        return (items[-1][0] or items[-1][1]).strip() if items else ""
    while isinstance(value, (list, tuple)) and value:
        value = value[-1]
    return value.strip() if isinstance(value, str) else ""


def _profiled_reason(cell: str) -> str:
    """A reason cell of the CompileProfiler table: a ``GuardFail(reason=...)`` repr (2.1+) or the text."""
    cell = cell.strip()
    m = _GUARD_FAIL_REPR.match(cell)
    return m["reason"] if m else cell
