"""torch's messages as a paste shows them: their patterns, and their texts turned into the lines
LogParser reads or into guard failures."""

from __future__ import annotations

import dataclasses
import re

from guarddiag.guardexpr import SOURCE_ROOT
from guarddiag.guardkinds import EQUALITY_OPS, GUARD_HELPER, MISMATCH, TENSOR_FAILURE_START
from guarddiag.ids import CACHE_ENTRY, CompileId
from guarddiag.logparse.blocks import (
    FUNCTION_NAME,
    LIMIT_ADVICE,
    LIMIT_FUNCTION_NAME,
    LIMIT_REASON,
    LIMIT_SIZE,
    LIMIT_TEXT,
    NOT_LITERAL,
    RECOMPILING_TEXT,
    TRIGGERED_TEXT,
    python_literal,
)
from guarddiag.logparse.events import Event, GuardFailure, LimitWarning, RecompileAnnounced

# Neutral frames: glog style without a compile id, one per kind of record LogParser reads.
RECOMPILE_FRAME = "V0101 00:00:00.000000 0 paste:1] [__recompiles] "
LIMIT_FRAME = "W0101 00:00:00.000000 0 paste:2] "

# The function's file may come without its line (torch 2.1 nightlies printed none; a paste may elide
# it as "..."), but it must look like a path: prose that starts "Recompiling function" is no message.
# blocks.RECOMPILING requires the line.
_RECOMPILING = re.compile(rf"^{RECOMPILING_TEXT}{FUNCTION_NAME} in (?:.+?:(?P<line>\d+)|\S*[/\\.<]\S*)\s*$")
TAGGED = re.compile(rf"^- (?P<ce>{CACHE_ENTRY}): (?P<text>.*)$")
# torchdynamo (torch < 2.0) warned under its own name, which LogParser does not read: its "hit config."
# line (read here as torch._dynamo's), and an older one-liner.
OLD_LIMIT_TEXT = r"torchdynamo hit config\."
OLD_ONE_LINER_TEXT = "torchdynamo hit recompilation cache limit"
LIMIT = re.compile(rf"^(?:{re.escape(LIMIT_TEXT)}|{OLD_LIMIT_TEXT})(?P<rest>{LIMIT_SIZE}.*)$")
OLD_LIMIT = re.compile(
    rf"^{OLD_ONE_LINER_TEXT} \((?P<value>\d+)\) for function '(?P<name>[^']+)' "
    r"\((?P<where>.+?:\d+)\)(?:, due to the following guard failures: (?P<reasons>.*))?$"
)
# "function: 'f' (file.py:3)"; a paste may show the file without its line, or no location at all.
LIMIT_FUNCTION = re.compile(rf"^{LIMIT_FUNCTION_NAME}(?: +\((?P<file>[^()]*?)(?::(?P<line>\d+))?\))?(?=\s|$)")
# The advice line alone: the reader takes a "User stack trace:" line (also in blocks._LIMIT_TRAILER) as a stack.
LIMIT_TRAILER = re.compile(f"^{LIMIT_ADVICE}", re.IGNORECASE)
SAME_FRAME_TEXT = "Guard failed on the same frame"
SAME_FRAME = re.compile(SAME_FRAME_TEXT + " it was created")
FAIL_REASON_TEXT = "Guard fail reason: "
FAIL_REASON = re.compile(rf"^{FAIL_REASON_TEXT}(?P<reason>.*)$")
# A guard-failure text shown alone, without a cache-entry tag: it must look like one. Looser than
# guardkinds' failure patterns (a paste may show a failure text of a torch they do not know): any
# tensor property, any comparison.
_GUARDISH = re.compile(
    rf"{GUARD_HELPER}|{SOURCE_ROOT}|^{TENSOR_FAILURE_START}.+' \w[\w ]* {MISMATCH}"
    rf"|^\S+ (?:{EQUALITY_OPS}|<=|>=|<|>) \S"
)
PROFILER_HEADER = re.compile(r"^\|?\s*Function\s*\|?\s+(?:Num )?Recompiles\s*\|?\s+Recompile Reasons")
PROFILER_ROW = re.compile(r"^'(?P<name>[^']+)' \((?P<file>[^()]*?):(?P<line>\d+)\)\s*\|?\s+(?P<count>\d+)(?:\s*\|?\s+(?P<reason>.*?))?$")
PROFILER_RULE = re.compile(r"^[-+=|\s]+$")
_GUARD_FAIL_REPR = re.compile(r"""^GuardFail\(reason=(?P<q>['"])(?P<reason>.*?)(?P=q), orig_code=""")

_QUOTED = re.compile(r"'((?:[^'\\\n]|\\.)+)'|\"((?:[^\"\\\n]|\\.)+)\"")

# What a message lacks is given to LogParser as these, and taken off the events it returns.
NO_LINE = 0  # no function starts on line 0
NO_FILE = "<no file shown>"


def tuple_with_list(text: str) -> list[str]:
    """torch 2.1 with ``report_all_guard_failures``: the tuple's second item is a list of reasons; as
    the lines of a recompile block (LogParser reads the tuple as one reason), or [] for another tuple."""
    parts = python_literal(text)
    if not isinstance(parts, tuple) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
        return []
    head, _, listed = parts[1].partition(": ")
    if head != TRIGGERED_TEXT + "s" or not listed.startswith("["):
        return []
    reasons = python_literal(listed)
    first = recompiling_line(parts[0])
    if first is None or not isinstance(reasons, list):
        return []
    return [first, f"    {TRIGGERED_TEXT}(s):", *(f"    - {r}" for r in reasons)]


def tuple_with_line(text: str) -> str:
    """A torch 2.1 tuple whose function has no line (2.1 nightlies) gets the stand-in line; else the text."""
    if not text.endswith(")") or "', " not in text and '", ' not in text:
        return text
    parts = python_literal(text)
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


def split_tag(text: str) -> tuple[CompileId | None, str]:
    m = TAGGED.match("- " + text)
    return (CompileId.parse(m["ce"]), m["text"]) if m else (None, text)


def orphan_failure(text: str) -> GuardFailure | None:
    """A ``- 0/1: ...`` line, or a ``- ...`` line that reads as a guard failure."""
    m = TAGGED.match(text)
    if m is not None:
        return GuardFailure(CompileId.parse(m["ce"]), repad(m["text"]))
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
    value = python_literal(text.strip())
    if value is NOT_LITERAL:
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
