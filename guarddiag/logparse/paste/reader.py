"""The paste reader: each repaired line read as a part of the torch message it belongs to."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from guarddiag.ids import Process, rank_prefix
from guarddiag.logparse.blocks import (
    LIMIT_FUNCTION_TEXT,
    LIMIT_REASON,
    LIMIT_TEXT,
    RECOMPILING_TEXT,
    RECOMPILING_TUPLE,
    STACK_TEXT,
    TRIGGERED_TEXT,
    heads_reasons,
)
from guarddiag.logparse.events import Event, GuardFailure, LimitWarning, RecompileAnnounced
from guarddiag.logparse.parser import LogParser
from guarddiag.logparse.paste.messages import (
    FAIL_REASON,
    FAIL_REASON_TEXT,
    LIMIT,
    LIMIT_FRAME,
    LIMIT_FUNCTION,
    LIMIT_TRAILER,
    NO_FILE,
    NO_LINE,
    OLD_LIMIT,
    PROFILER_HEADER,
    PROFILER_ROW,
    PROFILER_RULE,
    RECOMPILE_FRAME,
    SAME_FRAME,
    TAGGED,
    as_int,
    failure_of,
    last_listed,
    limit_reason,
    orphan_failure,
    profiled_reason,
    recompiling_line,
    repad,
    split_tag,
    tuple_with_line,
    tuple_with_list,
    unmarked,
)
from guarddiag.logparse.paste.rejoin import Rejoiner
from guarddiag.logparse.paste.repair import clean, unbordered, unescaped
from guarddiag.logparse.paste.split import pieces


@dataclass
class _State:
    """The message being read: its kind and what its lines still need."""

    kind: str = ""  # "recompile", "limit", "headless", "orphan", "profiler", "reason"
    in_stack: bool = False
    listed: bool = False  # orphan failures under a "triggered by ..." line: every "- " item is one
    name: str = ""
    file: str = ""
    line: int | None = None
    reason: str = ""
    failures: list[GuardFailure] | None = None
    profiler_rows: list[list] | None = None
    continued: list[str] | None = None  # the lines below a reason that ends with a colon


class PasteReader:
    """Feed the lines of a paste, get the events of the torch messages it shows."""

    def __init__(self) -> None:
        self._parser = LogParser(keep_guards=frozenset())
        self._rejoin = Rejoiner()
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
            for line in self._rejoin.feed(clean(segment), len(segment)):
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
        for _, rank, body in pieces(unbordered(unescaped(line))):
            self._body(body.strip(), rank, out)

    def _emit(self, frame: str, body: str, out: list[Event]) -> None:
        rank = rank_prefix(self._rank) if self._rank is not None else ""
        out.extend(self._counted(self._parser.feed(rank + frame + body)))

    def _counted(self, events: list[Event]) -> list[Event]:
        self.messages += sum(1 for e in events if isinstance(e, (RecompileAnnounced, LimitWarning)))
        return [unmarked(e) for e in events]

    def _event(self, event: Event, out: list[Event]) -> None:
        """A message read without torch's frame (no compile id): it keeps the rank its line showed."""
        self.messages += 1
        if self._rank is not None and getattr(event, "compile_id", "") is None and not getattr(event, "process", ""):
            event = replace(event, process=Process.of_rank(self._rank))  # type: ignore[type-var]
        out.append(event)

    def _body(self, text: str, rank: int | None, out: list[Event]) -> None:
        """One message line; ``rank``: the rank its prefix shows. A line of another rank does not continue
        the open message, which keeps the rank it began with."""
        state = self._state
        other = rank is not None and rank != self._rank
        if state.kind and not other and self._continues(text, out):
            return
        self._end(out)
        if rank is not None:
            self._rank = rank
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
        if kind == "reason":
            return self._reason_line(text)
        return False

    def _start(self, text: str, out: list[Event]) -> None:
        state = self._state
        if RECOMPILING_TUPLE.match(text):
            lines = tuple_with_list(text)
            for line in lines or [tuple_with_line(text)]:
                self._emit(RECOMPILE_FRAME, line, out)
            state.kind = "recompile" if lines else ""
        elif text.startswith(RECOMPILING_TEXT):
            header = recompiling_line(text)
            if header is not None:
                state.kind = "recompile"
                self._emit(RECOMPILE_FRAME, header, out)
        elif text.startswith(TRIGGERED_TEXT):
            state.kind, state.failures, state.listed = "orphan", [], True
        elif m := LIMIT.match(text):
            state.kind = "limit"
            self._emit(LIMIT_FRAME, LIMIT_TEXT + m["rest"], out)
        elif m := OLD_LIMIT.match(text):
            self._old_limit(m, out)
        elif (m := LIMIT_FUNCTION.match(text)) and m["file"] is not None:  # alone, it must show where
            state.kind, state.name, state.file, state.line = "headless", m["name"], m["file"] or "", as_int(m["line"])
        elif text.startswith("last reason:"):
            state.kind, state.reason = "headless", limit_reason(text)
        elif SAME_FRAME.search(text) or text.startswith(FAIL_REASON_TEXT):
            reason = FAIL_REASON.match(text)
            if reason is not None and reason["reason"].strip().endswith(":"):
                # `Duplicate tensors found:` and the aliased sources on the lines below it.
                state.kind, state.reason, state.continued = "reason", reason["reason"].strip(), []
            elif reason is not None and reason["reason"].strip():
                self._event(RecompileAnnounced(None, "", "", None, (failure_of(reason["reason"]),)), out)
        elif PROFILER_HEADER.match(text):
            state.kind, state.profiler_rows = "profiler", []
        elif text.startswith("- ") and orphan_failure(text) is not None:
            state.kind, state.failures = "orphan", [orphan_failure(text)]  # type: ignore[list-item]

    def _end(self, out: list[Event]) -> None:
        state = self._state
        if state.kind == "orphan" and state.failures:
            self._event(RecompileAnnounced(None, "", "", None, tuple(state.failures)), out)
        elif state.kind == "headless":
            self._event(LimitWarning(None, "", None, state.name, state.file, state.line, state.reason), out)
        elif state.kind == "profiler":
            self._profiled(state.profiler_rows or [], out)
        elif state.kind == "reason":
            failure = failure_of(state.reason)
            text = "\n".join([failure.text, *(state.continued or [])])
            self._event(RecompileAnnounced(None, "", "", None, (GuardFailure(failure.cache_entry, text),)), out)
        self._state = _State()

    def _reason_line(self, text: str) -> bool:
        """A line of a failure reason that went on below its colon: a printed list of sources, up to its ``]``."""
        lines = self._state.continued
        assert lines is not None
        opened = sum(line.count("[") - line.count("]") for line in lines)
        if (not lines and not text.startswith(("[", "'", '"'))) or (lines and opened <= 0):
            return False
        lines.append(text)
        return True

    def _recompile_line(self, text: str, out: list[Event]) -> bool:
        state = self._state
        if heads_reasons(text):
            self._emit(RECOMPILE_FRAME, "    " + text, out)
            return True
        if text == "-":
            return True
        if text.startswith(STACK_TEXT):
            state.in_stack = True
            self._emit(RECOMPILE_FRAME, "    - " + text, out)
            return True
        if not text.startswith("- "):
            if state.in_stack and text.startswith('File "'):  # a stack line whose "- " a web form dropped
                self._emit(RECOMPILE_FRAME, "    -     " + text, out)
                return True
            return False
        item = text[2:].strip()
        if item.startswith(STACK_TEXT):
            state.in_stack = True
        elif TAGGED.match(text):
            state.in_stack = False
        elif state.in_stack:
            # Whitespace collapsed by a web form: re-indent the stack lines of the last reason.
            self._emit(RECOMPILE_FRAME, "    -     " + item, out)
            return True
        self._emit(RECOMPILE_FRAME, "    - " + repad(item), out)
        return True

    def _limit_line(self, text: str, out: list[Event]) -> bool:
        state = self._state
        headless = state.kind == "headless"
        if m := LIMIT_FUNCTION.match(text):
            if headless:
                if state.name:
                    return False  # the next headless warning
                state.name, state.file, state.line = m["name"], m["file"] or "", as_int(m["line"])
            else:
                where = f"{m['file'] or NO_FILE}:{m['line'] or NO_LINE}"
                self._emit(LIMIT_FRAME, f"   {LIMIT_FUNCTION_TEXT}{m['name']}' ({where})", out)
            return True
        if LIMIT_REASON.match(text):
            if headless:
                if state.reason:
                    return False
                state.reason = limit_reason(text)
            else:
                self._emit(LIMIT_FRAME, "   reasons: " + limit_reason(text), out)
            return True
        return not text or LIMIT_TRAILER.match(text) is not None or text.startswith((STACK_TEXT, "File "))

    def _orphan_line(self, text: str) -> bool:
        state = self._state
        if not text.startswith("- "):
            if text.startswith(STACK_TEXT):
                state.in_stack = True
            return not text or text == "-" or state.in_stack
        item = text[2:].strip()
        if item.startswith(STACK_TEXT):
            state.in_stack = True
            return True
        failure = orphan_failure(text)
        if failure is None and state.listed and not state.in_stack:
            failure = GuardFailure(None, repad(item))
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
        if not text or PROFILER_RULE.match(text):
            return True
        if m := PROFILER_ROW.match(cells):
            reasons = [profiled_reason(m["reason"])] if m["reason"] else []
            rows.append([m["name"], m["file"], int(m["line"]), int(m["count"]), reasons])
            return True
        if rows and not text.startswith(("Set ", "No ")):
            reason = cells.strip("|").strip()
            if reason:
                rows[-1][4].append(profiled_reason(reason))
            return True
        return False

    def _profiled(self, rows: list[list], out: list[Event]) -> None:
        """One recompile per count in a CompileProfiler row, each with its listed reason when there is one."""
        for name, file, line, count, reasons in rows:
            for i in range(count):
                failures = (GuardFailure(*split_tag(reasons[i])),) if i < len(reasons) else ()
                self._event(RecompileAnnounced(None, name, file, line, failures), out)

    def _old_limit(self, m: re.Match[str], out: list[Event]) -> None:
        """Pre-2.0 torchdynamo: the whole limit warning on one line, reasons as a list of lists."""
        self._emit(LIMIT_FRAME, f"{LIMIT_TEXT}cache_size_limit ({m['value']})", out)
        self._emit(LIMIT_FRAME, f"   {LIMIT_FUNCTION_TEXT}{m['name']}' ({m['where']})", out)
        reason = last_listed(m["reasons"] or "")
        if reason:
            self._emit(LIMIT_FRAME, "   reasons: " + reason, out)
        self._state.kind = "limit"
