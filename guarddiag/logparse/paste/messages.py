"""torch's messages as a paste shows them: their patterns, and their texts turned into the lines
LogParser reads or into guard failures."""

from __future__ import annotations

import ast
import dataclasses
import re

from guarddiag.logparse.events import Event, GuardFailure, LimitWarning, RecompileAnnounced

# Neutral frames: glog style without a compile id, one per kind of record LogParser reads.
RECOMPILE_FRAME = "V0101 00:00:00.000000 0 paste:1] [__recompiles] "
LIMIT_FRAME = "W0101 00:00:00.000000 0 paste:2] "

# The function's file may come without its line (torch 2.1 nightlies printed none; a paste may elide
# it as "..."), but it must look like a path: prose that starts "Recompiling function" is no message.
_RECOMPILING = re.compile(
    r"^Recompiling function (?:<[^>]+>|\S+) in (?:.+?:(?P<line>\d+)|\S*[/\\.<]\S*)\s*$"
)
TAGGED = re.compile(r"^- (?P<ce>!?\d+(?:/\d+)+(?:_\d+)?): (?P<text>.*)$")
LIMIT = re.compile(r"^(?:torch\._dynamo|torchdynamo) hit config\.(?P<rest>\w+ \(\d+\).*)$")
OLD_LIMIT = re.compile(
    r"^torchdynamo hit recompilation cache limit \((?P<value>\d+)\) for function '(?P<name>[^']+)' "
    r"\((?P<where>.+?:\d+)\)(?:, due to the following guard failures: (?P<reasons>.*))?$"
)
# "function: 'f' (file.py:3)"; a paste may show the file without its line, or no location at all.
LIMIT_FUNCTION = re.compile(r"^function: '(?P<name>[^']+)'(?: +\((?P<file>[^()]*?)(?::(?P<line>\d+))?\))?(?=\s|$)")
LIMIT_REASON = re.compile(r"^(?:last reason|reasons):\s*(?:reasons:\s*)?(?P<reason>.*)$")
LIMIT_TRAILER = re.compile(r"^(?:to log all recompilation|to diagnose recompilation)", re.IGNORECASE)
SAME_FRAME = re.compile(r"Guard failed on the same frame it was created")
FAIL_REASON = re.compile(r"^Guard fail reason: (?P<reason>.*)$")
# A guard-failure text shown alone, without a cache-entry tag: it must look like one.
_GUARDISH = re.compile(r"___check_|[LG]\['|^tensor '.+' \w[\w ]* mismatch|^\S+ (?:==|!=|<=|>=|<|>|is not|is) \S")
PROFILER_HEADER = re.compile(r"^\|?\s*Function\s*\|?\s+(?:Num )?Recompiles\s*\|?\s+Recompile Reasons")
PROFILER_ROW = re.compile(r"^'(?P<name>[^']+)' \((?P<file>[^()]*?):(?P<line>\d+)\)\s*\|?\s+(?P<count>\d+)(?:\s*\|?\s+(?P<reason>.*?))?$")
PROFILER_RULE = re.compile(r"^[-+=|\s]+$")
_GUARD_FAIL_REPR = re.compile(r"""^GuardFail\(reason=(?P<q>['"])(?P<reason>.*?)(?P=q), orig_code=""")

_QUOTED = re.compile(r"'((?:[^'\\\n]|\\.)+)'|\"((?:[^\"\\\n]|\\.)+)\"")

# What a message lacks is given to LogParser as these, and taken off the events it returns.
NO_LINE = 0  # no function starts on line 0
NO_FILE = "<no file shown>"
_NOT_LITERAL = object()


def tuple_with_list(text: str) -> list[str]:
    """torch 2.1 with ``report_all_guard_failures``: the tuple's second item is a list of reasons; as
    the lines of a recompile block (LogParser reads the tuple as one reason), or [] for another tuple."""
    parts = _literal(text)
    if not isinstance(parts, tuple) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
        return []
    head, _, listed = parts[1].partition(": ")
    if head != "triggered by the following guard failures" or not listed.startswith("["):
        return []
    reasons = _literal(listed)
    first = recompiling_line(parts[0])
    if first is None or not isinstance(reasons, list):
        return []
    return [first, "    triggered by the following guard failure(s):", *(f"    - {r}" for r in reasons)]


def tuple_with_line(text: str) -> str:
    """A torch 2.1 tuple whose function has no line (2.1 nightlies) gets the stand-in line; else the text."""
    if not text.endswith(")") or "', " not in text and '", ' not in text:
        return text
    parts = _literal(text)
    if not isinstance(parts, tuple) or not parts or not all(isinstance(p, str) for p in parts):
        return text
    m = _RECOMPILING.match(parts[0])
    if m is None or m["line"]:
        return text
    return repr((f"{parts[0].rstrip()}:{NO_LINE}", *parts[1:]))


def recompiling_line(text: str) -> str | None:
    """A ``Recompiling function f in x.py:3`` line as LogParser reads it (the stand-in line when none is
    shown), or None when the text is no such line."""
    m = _RECOMPILING.match(text)
    if m is None:
        return None
    return text.rstrip() if m["line"] else f"{text.rstrip()}:{NO_LINE}"


def _literal(text: str) -> object:
    """The Python literal ``text`` spells, or ``_NOT_LITERAL`` (also for one too long or too deep to read)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def as_int(digits: str | None) -> int | None:
    return int(digits) if digits else None


def unmarked(event: Event) -> Event:
    """An event without the stand-ins for what the paste did not show (no line, no file)."""
    if isinstance(event, (RecompileAnnounced, LimitWarning)) and (event.line == NO_LINE or event.file == NO_FILE):
        line = None if event.line == NO_LINE else event.line
        return dataclasses.replace(event, line=line, file="" if event.file == NO_FILE else event.file)
    return event


def failure_of(text: str) -> GuardFailure:
    entry, rest = split_tag(text.strip())
    return GuardFailure(entry, repad(rest))


def split_tag(text: str) -> tuple[str | None, str]:
    m = TAGGED.match("- " + text)
    return (m["ce"], m["text"]) if m else (None, text)


def orphan_failure(text: str) -> GuardFailure | None:
    """A ``- 0/1: ...`` line, or a ``- ...`` line that reads as a guard failure."""
    m = TAGGED.match(text)
    if m is not None:
        return GuardFailure(m["ce"], repad(m["text"]))
    rest = text[2:].strip()
    return GuardFailure(None, repad(rest)) if _GUARDISH.search(rest) else None


def repad(text: str) -> str:
    """torch pads a guard before its ``  # comment``; a web form collapses that to one space."""
    if "  #" in text or " # " not in text:
        return text
    expr, _, comment = text.partition(" # ")
    return f"{expr}  # {comment}"


def limit_reason(text: str) -> str:
    """The reason of a ``last reason:`` / ``reasons:`` line; torch 2.0 and torchdynamo print a list."""
    m = LIMIT_REASON.match(text)
    reason = m["reason"].strip() if m else ""
    if reason.startswith("["):
        return last_listed(reason) or reason
    return repad(reason)


def last_listed(text: str) -> str:
    """The newest reason of a printed list (``[['a'], ['b']]`` or ``["a", "b"]``); "" if it is no list."""
    value = _literal(text.strip())
    if value is _NOT_LITERAL:
        # A list cut short (a paste's excerpt): its last whole quoted item.
        items = _QUOTED.findall(text)
        return (items[-1][0] or items[-1][1]).strip() if items else ""
    while isinstance(value, (list, tuple)) and value:
        value = value[-1]
    return value.strip() if isinstance(value, str) else ""


def profiled_reason(cell: str) -> str:
    """A reason cell of the CompileProfiler table: a ``GuardFail(reason=...)`` repr (2.1+) or the text."""
    cell = cell.strip()
    m = _GUARD_FAIL_REPR.match(cell)
    return m["reason"] if m else cell
