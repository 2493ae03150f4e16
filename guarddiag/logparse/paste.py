"""Pastes: torch's messages found by their text where the line frame is missing or mangled.

What users paste into issues, chats and notebooks went through a terminal, a browser and a
Markdown editor: torch's line prefix is gone or cut short, lines are quoted (``> ``), indented,
put in a table, wrapped at a terminal width, flattened into one line by a web form, HTML-escaped,
or share the line with a progress bar. :class:`PasteReader` undoes that, one line at a time:

1. clean a physical line: split it at ``\\r`` (progress bars), unescape HTML, drop quote markers
   and the ``#`` of a log pasted into a code comment;
2. re-join lines cut at the terminal width (:class:`_Rejoiner`), then drop table borders;
3. split a line that holds several messages at the places a torch message or prefix starts
   (one linear scan, :data:`_MARKERS`), a prefix staying with the message after it;
4. strip whatever is left of torch's prefix (:func:`strip_prefix`), keeping a ``[rankN]:``;
5. recognise the message by its text and give each of its lines a neutral frame, so that
   :class:`~guarddiag.logparse.parser.LogParser` reads it with its own record readers (recompile
   blocks, the torch 2.1 tuple, limit warnings); what a message does not show (its function's line
   or file) is given as a stand-in and taken off the events again.

Compile ids are dropped on purpose: a paste shows some of torch's messages, not the log, so
counts come from the messages shown (a recompile per ``Recompiling function`` message) and not
from compile numbers. What LogParser has no reader for is turned into events here: the
``CompileProfiler`` table, guard failures shown without their ``Recompiling function`` line (a
single ``- 0/1: ...`` line, ``Guard fail reason:`` of an error), a limit warning's tail without
its first line, and the pre-2.0 ``torchdynamo hit recompilation cache limit`` one-liner.
"""

from __future__ import annotations

import ast
import dataclasses
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
    r"|(?<!\S)(?:\.\.\.)?[^\s\[\]]*\.py:\d+\] (?=\[)"  # a glog origin cut short: ".../guards.py:2772] [16/8]"
    r"|(?<!\S)\[!?\d+/\d+(?:_\d+)?\] \[__\w+\] "  # a prefix cut to its compile id: "[0/1] [__recompiles] "
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
    r"|\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]:?"  # "[DEBUG]" of a logger name, "[DEBUG]:" of a bare format
)
# Quote markers: Markdown "> ", and "#" when a log was pasted into a code comment ("# >>", "# [0/8] ...").
_QUOTE = re.compile(r"^\s*(?:>\s*)+")
_COMMENT = re.compile(r"^\s*#+ ?")

# The function's file may come without its line (torch 2.1 nightlies printed none; a paste may elide
# it as "..."), but it must look like a path: prose that starts "Recompiling function" is no message.
_RECOMPILING = re.compile(
    r"^Recompiling function (?:<[^>]+>|\S+) in (?:.+?:(?P<line>\d+)|\S*[/\\.<]\S*)\s*$"
)
_TAGGED = re.compile(r"^- (?P<ce>!?\d+(?:/\d+)+(?:_\d+)?): (?P<text>.*)$")
_LIMIT = re.compile(r"^(?:torch\._dynamo|torchdynamo) hit config\.(?P<rest>\w+ \(\d+\).*)$")
_OLD_LIMIT = re.compile(
    r"^torchdynamo hit recompilation cache limit \((?P<value>\d+)\) for function '(?P<name>[^']+)' "
    r"\((?P<where>.+?:\d+)\)(?:, due to the following guard failures: (?P<reasons>.*))?$"
)
# "function: 'f' (file.py:3)"; a paste may show the file without its line, or no location at all.
_LIMIT_FUNCTION = re.compile(r"^function: '(?P<name>[^']+)'(?: +\((?P<file>[^()]*?)(?::(?P<line>\d+))?\))?(?=\s|$)")
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
# What is left of a torch prefix at a line's start, that no line a terminal cut goes on with: a rank,
# a compile id ("[0/8] ", never "[0]"), an artifact, a log level.
_PREFIX_START = re.compile(
    r"\[rank\d+\]:|\[!?\d+/\d+(?:_\d+)?\] |\[__\w+\] |\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]:?|"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):torch"
)
# How a line a terminal cut may end, that no whole line ends with (an open bracket, the next item of a tuple).
_OPENERS = ("(", "[", "{", "('", '("', "['", '["', ", '", ', "')
# Where a glog or bracketed-date torch prefix starts, for a framed line with other output before it.
_FRAME_START = re.compile(r"(?:\[rank\d+\]:)?(?:[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d+ |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\] )")

# What a message lacks is given to LogParser as these, and taken off the events it returns.
_NO_LINE = 0  # no function starts on line 0
_NO_FILE = "<no file shown>"

_DIGITS = re.compile(r"\d+")
# Whole HTML character references only: "&#x2" (the rest of it cut onto the next line) stays as it is.
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});")
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
        return self._rejoin.wrap_width()

    def feed(self, raw: str) -> list[Event]:
        """One physical line (newline allowed); the events it completed."""
        out: list[Event] = []
        for segment in raw.rstrip("\r\n").split("\r"):
            for line in self._rejoin.feed(_clean(segment), len(segment)):
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
        # Again once re-joined: a terminal may have cut an escape ("&#x" + "27;").
        for _, rank, body in _pieces(_unbordered(_unescaped(line))):
            if rank is not None:
                self._rank = rank
            self._body(body.strip(), out)

    def _emit(self, frame: str, body: str, out: list[Event]) -> None:
        rank = f"[rank{self._rank}]:" if self._rank is not None else ""
        out.extend(self._counted(self._parser.feed(rank + frame + body)))

    def _counted(self, events: list[Event]) -> list[Event]:
        self.messages += sum(1 for e in events if isinstance(e, (RecompileAnnounced, LimitWarning)))
        return [_unmarked(e) for e in events]

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
            for line in lines or [_tuple_with_line(text)]:
                self._emit(_RECOMPILE_FRAME, line, out)
            state.kind = "recompile" if lines else ""
        elif text.startswith("Recompiling function "):
            header = _header(text)
            if header is not None:
                state.kind = "recompile"
                self._emit(_RECOMPILE_FRAME, header, out)
        elif text.startswith("triggered by the following guard failure"):
            state.kind, state.failures, state.listed = "orphan", [], True
        elif m := _LIMIT.match(text):
            state.kind = "limit"
            self._emit(_LIMIT_FRAME, "torch._dynamo hit config." + m["rest"], out)
        elif m := _OLD_LIMIT.match(text):
            self._old_limit(m, out)
        elif (m := _LIMIT_FUNCTION.match(text)) and m["file"] is not None:  # alone, it must show where
            state.kind, state.name, state.file, state.line = "headless", m["name"], m["file"] or "", _int(m["line"])
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
                state.name, state.file, state.line = m["name"], m["file"] or "", _int(m["line"])
            else:
                where = f"{m['file'] or _NO_FILE}:{m['line'] or _NO_LINE}"
                self._emit(_LIMIT_FRAME, f"   function: '{m['name']}' ({where})", out)
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
    """Undo what a web page and a Markdown editor did to one line: HTML escapes, quotes, comments."""
    segment = _unescaped(segment)
    for _ in range(4):  # a quote of a comment, a comment of a quote
        head = segment.lstrip()[:1]
        unmarked = _uncommented(segment) if head == "#" else _unquoted(segment) if head == ">" else segment
        if unmarked == segment:
            break
        segment = unmarked
    return segment


def _unescaped(text: str) -> str:
    """The text without its HTML escapes: escaped again by each page it was copied through (bounded,
    for hostile lines)."""
    for _ in range(8):
        if "&" not in text or ";" not in text:
            break
        unescaped = _ENTITY.sub(_entity, text)
        if unescaped == text:
            break
        text = unescaped
    return text


def _entity(m: re.Match[str]) -> str:
    import html  # deferred: only an HTML-escaped paste needs it, and every command would pay for it at start-up

    return html.unescape(m.group())


def _unquoted(segment: str) -> str:
    """A line without its quote markers: ``> `` (one or nested), or ``>`` alone. A single ``>`` right
    before the text is kept: it is more likely the rest of a line a terminal cut (``<string>:6``)."""
    m = _QUOTE.match(segment)
    assert m is not None
    run = m.group()
    if run[-1:].isspace() or run.count(">") > 1 or m.end() == len(segment):
        rest = segment[m.end() :]
        # One blank after the markers is theirs; keep the rest of the indentation (torch's own).
        return rest if not run[-1:].isspace() else segment[len(run.rstrip()) + 1 :]
    return segment


def _unbordered(line: str) -> str:
    """A table row without its borders (after re-joining: a terminal may have cut the row)."""
    stripped = line.strip()
    if len(stripped) > 1 and stripped[0] == "|" and stripped[-1] == "|" and not stripped.startswith("| +-"):
        return stripped[1:-1].strip()
    return line


def _uncommented(segment: str) -> str:
    """A log line pasted into a code comment, without its ``#``: only when a quote, a prefix or a torch
    message follows (a guard's ``# comment``, cut off by a terminal, stays as it is)."""
    rest = _COMMENT.sub("", segment, count=1)
    body = rest.lstrip()
    return rest if body.startswith((">", "[")) or _MARKERS.match(body) else segment


def split_messages(line: str) -> Iterator[str]:
    """The messages of a line, cut where a torch message, a part of one or a prefix starts.

    A torch 2.1 tuple (``('Recompiling function f in x.py:3', "triggered by ...")``) is one
    message: only a prefix or another message ends it. A prefix stays with the message after it."""
    for piece, _, _ in _pieces(line):
        yield piece


def _pieces(line: str) -> Iterator[tuple[str, int | None, str]]:
    """``(piece, rank, body)`` of each message of a line (:func:`split_messages`): the piece as it is in
    the line, the rank its prefix names, and the piece without its prefix. One scan of the line, and
    each prefix read once: a prefix alone (or its first part: a glog time before its origin) goes with
    what follows it."""
    start = body_at = 0
    rank: int | None = None
    in_tuple = False
    for m in _MARKERS.finditer(line):
        at = m.start()
        if in_tuple and not m.group().startswith(_TUPLE_ENDS):
            continue
        in_tuple = m.group()[0] == "("
        if at == body_at:
            continue
        more_rank, body = strip_prefix(line[body_at:at])  # each part of the line read once
        rank = more_rank if more_rank is not None else rank
        if not body.strip():
            body_at = at  # a prefix alone, so far
            continue
        yield from _items(line[start:at], rank, body)
        start = body_at = at
        rank = None
    more_rank, body = strip_prefix(line[body_at:])
    yield from _items(line[start:], more_rank if more_rank is not None else rank, body)


def _items(piece: str, rank: int | None, body: str) -> Iterator[tuple[str, int | None, str]]:
    """A piece (its ``body`` ends it), or, when a flattened line put a list on it (``triggered by ...:
    - a - b``), its head and each of its items."""
    if " - " not in body or not body.startswith(_LISTS_ITEMS):
        yield _unmarked_end(piece), rank, _unmarked_end(body)
        return
    prefix = piece[: len(piece) - len(body)]
    head, _, rest = _unmarked_end(body).partition(":")
    yield prefix + head + ":", rank, head + ":"
    for item in rest.split(" - "):
        item = _unmarked_end(item).strip()
        if item.strip("-#>| "):
            text = "- " + item.removeprefix("- ")
            yield text, None, text


def _unmarked_end(piece: str) -> str:
    """A piece without the marks a flattened line left at its end: the dash of the next list item, the
    quote marker (``>``, ``# >>``) or table border (``|``) of the next line. Linear: one walk back."""
    end = len(piece.rstrip())
    while end:
        start = end
        while start and piece[start - 1] in "-#>|":
            start -= 1
        if start == end or (start and not piece[start - 1].isspace()):
            break
        while start and piece[start - 1].isspace():
            start -= 1
        end = start
    return piece[:end]


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

    The width is found in the first lines read (:func:`_wrap_evidence`); a line of that length continues
    on the next one unless the next one starts a message or a torch prefix of its own. The indentation
    every line of a paste has (indented by 4 in Markdown, after the terminal cut it) is taken off first:
    the rest of a cut line was indented too. A line's length is the length of its text once cleaned
    (quote markers and HTML escapes added after the terminal cut it) or the length it had as read (a
    text quoted, commented or escaped before a terminal cut it): whichever shows more cut lines."""

    def __init__(self) -> None:
        self.window: list[tuple[str, int]] | None = []
        self.width = 0
        self._as_read = False  # lines measured by their length as read, not cleaned
        self._indent = ""
        self._pending = ""
        self._pending_length = 0

    def feed(self, line: str, length: int) -> list[str]:
        """A cleaned line and its length as read; the whole lines it completed."""
        if self.window is not None:
            self.window.append((line, length))
            if len(self.window) < WINDOW:
                return []
            return self._decide()
        return self._join(line.removeprefix(self._indent), length)

    def finish(self) -> list[str]:
        out = self._decide() if self.window is not None else []
        if self._pending:
            out.append(self._pending)
            self._pending = ""
        return out

    def wrap_width(self) -> int:
        """The width of the lines read so far (0: not cut)."""
        if self.window is None:
            return self.width
        return self._measure(self.window)[0]

    def _measure(self, window: list[tuple[str, int]]) -> tuple[int, bool, str, list[str]]:
        """(width, measured as read, indentation, the lines without it)."""
        indent, texts = _dedented([text for text, _ in window])
        cleaned = _wrap_evidence(texts)
        as_read = _wrap_evidence(texts, [length for _, length in window])
        width, _ = max(cleaned, as_read, key=lambda e: e[1])
        return width, as_read[1] > cleaned[1], indent, texts

    def _decide(self) -> list[str]:
        window = self.window or []
        self.window = None
        self.width, self._as_read, self._indent, texts = self._measure(window)
        out: list[str] = []
        for text, (_, length) in zip(texts, window, strict=True):
            out += self._join(text, length)
        return out

    def _join(self, line: str, length: int) -> list[str]:
        size = length if self._as_read else len(line)
        out = []
        if self._pending:
            if not _goes_on(self._pending, line):
                out.append(self._pending)
                self._pending = ""
            else:
                line, size, self._pending = self._pending + line, self._pending_length + size, ""
        if self.width and line and size % self.width == 0:
            self._pending, self._pending_length = line, size
            return out
        out.append(line)
        return out


def _dedented(lines: list[str]) -> tuple[str, list[str]]:
    """The indentation every non-blank line has, and the lines without it."""
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
    indent = min(indents, key=len, default="")
    while indent and not all(i.startswith(indent) for i in indents):
        indent = indent[:-1]
    if not indent:
        return "", lines
    return indent, [line.removeprefix(indent) for line in lines]


def _wrap_evidence(lines: list[str], lengths: list[int] | None = None) -> tuple[int, int]:
    """(width, lines cut at it): the longest line's length (or of ``lengths``, the lines' lengths as
    read), when it is long enough for a terminal and the lines show they were cut there: two lines of
    that length, of different messages, each go on in the next line (one that starts no message or
    prefix of its own). A log's own longest lines are one message repeated (the same text but for its
    numbers), or are followed by lines of their own: neither is taken for a wrap; (0, 0)."""
    sizes = lengths if lengths is not None else [len(line) for line in lines]
    top = max(sizes, default=0)
    if top < _MIN_WRAP:
        return 0, 0
    cut: set[str] = set()
    count = 0
    for size, line, after in zip(sizes, lines, lines[1:], strict=False):
        if size == top and _goes_on(line, after):
            cut.add(_DIGITS.sub("0", line))
            count += 1
    return (top, count) if len(cut) >= 2 else (0, 0)


def _goes_on(line: str, after: str) -> bool:
    """Whether ``after`` may be the rest of ``line``, cut by a terminal: it starts no message or prefix of
    its own (it may be the padding alone), or ``line`` cannot end there: a torch prefix alone (cut from
    its message), or an open bracket (``('`` of a torch 2.1 tuple)."""
    if not after:
        return False
    if not _starts_anew(after):
        return True
    body = strip_prefix(line)[1].rstrip()
    return not body or body.endswith(_OPENERS)


def _starts_anew(line: str) -> bool:
    """Whether a line is a message or a prefix of its own, not the rest of a line cut before it (a
    glog origin counts only when it shows it was cut short, ``.../guards.py:2772] [16/8]``: else it is
    the rest of a prefix a terminal cut inside its path)."""
    text = line.lstrip()
    if _PREFIX_START.match(text):
        return True
    m = _MARKERS.match(text)
    return m is not None and (text.startswith("...") or not m.group().endswith("] "))


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
    header = _header(parts[0])
    if header is None or not isinstance(reasons, list):
        return []
    return [header, "    triggered by the following guard failure(s):", *(f"    - {r}" for r in reasons)]


def _tuple_with_line(text: str) -> str:
    """A torch 2.1 tuple whose function has no line (2.1 nightlies) gets the stand-in line; else the text."""
    if not text.endswith(")") or "', " not in text and '", ' not in text:
        return text
    try:
        parts = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if not isinstance(parts, tuple) or not parts or not all(isinstance(p, str) for p in parts):
        return text
    m = _RECOMPILING.match(parts[0])
    if m is None or m["line"]:
        return text
    return repr((f"{parts[0].rstrip()}:{_NO_LINE}", *parts[1:]))


def _header(text: str) -> str | None:
    """A ``Recompiling function f in x.py:3`` line as LogParser reads it (the stand-in line when none is
    shown), or None when the text is no such line."""
    m = _RECOMPILING.match(text)
    if m is None:
        return None
    return text.rstrip() if m["line"] else f"{text.rstrip()}:{_NO_LINE}"


def _int(digits: str | None) -> int | None:
    return int(digits) if digits else None


def _unmarked(event: Event) -> Event:
    """An event without the stand-ins for what the paste did not show (no line, no file)."""
    if isinstance(event, (RecompileAnnounced, LimitWarning)) and (event.line == _NO_LINE or event.file == _NO_FILE):
        line = None if event.line == _NO_LINE else event.line
        return dataclasses.replace(event, line=line, file="" if event.file == _NO_FILE else event.file)
    return event


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
