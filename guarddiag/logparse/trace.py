"""torch's structured trace (``TORCH_TRACE=DIR``, tlparse's input) read into the parser's events.

A trace file holds one record a line: a glog prefix, then a JSON envelope naming the record's kind
(``{"dynamo_start": {...}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}``), and, when the envelope
has ``has_payload``, the lines that follow it, each begun by a tab. The records read here, and the events
they give (the text log's events, so that a trace and the log of the same run make one model):

- ``str``: the interned file names other records point to by number;
- ``dynamo_start``: a compile began; its stack's last frame is the compiled code (name, file, first
  line): :class:`CompileSeen`, :class:`FrameNamed`;
- the ``recompile_reasons`` artifact: each cache entry's first failing guard (a JSON list; torch >= 2.11
  writes a lone reason as bare text, with a ``User stack trace:`` under each), held until the compile's
  code is named: :class:`RecompileAnnounced`;
- ``dynamo_cpp_guards_str``: the guard tree of a compile, the text the log prints under ``GUARDS:``
  (``dynamo_guards``, a JSON list of guard codes, where a compile has no tree): :class:`GuardListing`;
- the ``dynamo_graph_break_reason`` artifact: :class:`GraphBreakSeen`;
- ``create_symbol`` and ``guard_added_fast``: :class:`SymbolCreated`, :class:`SizeGuardAdded`;
- ``compilation_metrics``: torch's record of the attempt (:class:`~guarddiag.ledger.CompileRecord`, the
  ledger a run keeps); an attempt refused at the recompile limit has no ``dynamo_start``, and its
  record is the :class:`LimitWarning`.

No other record is decoded: a line is told by the kind that opens its envelope, and payload lines are
skipped by their first character. Kinds guarddiag knows and does not need are counted as read; others
are unrecognized (``--strict``). The compile ids of a process restart at ``0/0`` after
``torch._dynamo.reset()``: a compile that starts again opens a new cache generation, as in the log.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator

from guarddiag.ids import MAIN_PROCESS, CompileId, Process
from guarddiag.ledger import CompileRecord, as_seconds, as_text, as_whole, torch_figures
from guarddiag.logparse.blocks import GraphBreakBlock, GuardBlock, reason_failure
from guarddiag.logparse.events import (
    CompileSeen,
    Event,
    FrameNamed,
    GraphBreakSeen,
    GuardFailure,
    GuardListing,
    LimitWarning,
    RecompileAnnounced,
    SizeGuardAdded,
    SymbolCreated,
)
from guarddiag.logparse.guards import TALLY_DEPTH, flat_guard
from guarddiag.logparse.parser import ParseCounters

# The glog prefix of a record's line, up to the envelope: ``V1203 17:50:08.235000 22436 torch/_logging/structured.py:28] ``.
_PREFIX = re.compile(r"[VIWEF]\d{4} [\d:.]+ +\d+ [^\]\n]*\] (?=\{\")")
# Every record kind torch writes that tlparse reads (its src/types.rs Envelope) or torch's callers of
# trace_structured name: read as torch's even where guarddiag needs nothing from it.
KNOWN_KINDS = frozenset({
    "str", "dynamo_start", "dynamo_output_graph", "optimize_ddp_split_graph", "optimize_ddp_split_child",
    "compiled_autograd_graph", "dynamo_guards", "dynamo_cpp_guards_str", "aot_forward_graph", "aot_backward_graph",
    "aot_inference_graph", "aot_joint_graph", "inductor_pre_grad_graph", "inductor_post_grad_graph",
    "inductor_output_code", "compilation_metrics", "bwd_compilation_metrics", "aot_autograd_backward_compilation_metrics",
    "graph_dump", "link", "symbolic_shape_specialization", "propagate_real_tensors_provenance", "guard_added",
    "create_unbacked_symbol", "create_symbol", "expression_created", "missing_fake_kernel", "mismatched_fake_kernel",
    "artifact", "memoizer_artifacts", "describe_storage", "describe_tensor", "describe_source", "dump_file",
    "chromium_event", "guard_added_fast", "exported_program", "unbacked_symbol_created", "inductor_input_graph", "export",
    "guard_on_data_dependent_error", "propagate_real_tensors",
    # torch's metrics of a backward compile, and of work done at run time (autotuning): no compile attempt of a frame.
    "compilation_metrics_runtime", "bwd_compilation_metrics_runtime",
})
# The kinds decoded here (the others are counted and skipped unread).
_READ = frozenset({
    "str", "dynamo_start", "dynamo_cpp_guards_str", "dynamo_guards", "compilation_metrics", "artifact",
    "create_symbol", "guard_added_fast",
})
# The artifacts read (an artifact's name is in its envelope's first bytes: the others are not decoded).
_RECOMPILE_REASONS, _GRAPH_BREAK = "recompile_reasons", "dynamo_graph_break_reason"
_ARTIFACTS = (f'"name": "{_RECOMPILE_REASONS}"', f'"name": "{_GRAPH_BREAK}"')
# The limit a refusal's reason names (torch >= 2.8, in its developer context), and its value.
_LIMIT_TYPE = re.compile(r"Limit type: (?P<limit>\w+)")
# A file of Python's standard library (a trace names no folder of it): under lib/pythonX.Y, not in a package folder.
_STDLIB = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\](?!(?:site|dist)-packages)")
_LIMIT_SET = re.compile(r"currently set to (?P<value>\d+)")


class TraceParser:
    """Feed a trace's lines, get events (the interface of :class:`~guarddiag.logparse.parser.LogParser`),
    and torch's records of each attempt in :attr:`records`. One instance per trace file (one process)."""

    def __init__(self, keep_guards: frozenset[str] | None = None, locations: bool = True, process: Process = MAIN_PROCESS) -> None:
        """``keep_guards``, ``locations``: as for the log parser's listings; ``process``: the process of the file."""
        self._keep_guards = keep_guards
        self._locations = locations
        self._process = process
        self._seen_guards: dict | None = {} if not locations and keep_guards is None else None
        self.counters = ParseCounters()
        # Records read (each envelope line), whatever their kind.
        self.envelopes = 0
        # What torch's version recorded, for what the trace cannot show: a recompile's reasons (torch >= 2.5),
        # the dynamo config of an attempt (>= 2.6), and whether anything recompiled at all.
        self._saw_reasons = self._saw_config = self._saw_recompile = False
        self.records: list[CompileRecord] = []
        # Kinds known and not read, by count (what a trace holds besides what guarddiag reads).
        self.skipped: dict[str, int] = {}
        self.torch_version: str | None = None
        self._strings: dict[int, str] = {}
        self._torch_dir: str | None = None
        # The record whose payload lines are being read: a guard tree is streamed into its block, any
        # other payload gathered.
        self._payload: list[str] | None = None
        self._block: GuardBlock | GraphBreakBlock | None = None
        self._on_payload: tuple[str, dict] | None = None
        self._generation = 0
        self._started: set[tuple] = set()
        self._listed: set[tuple] = set()
        self._seen: set[tuple] = set()
        self._frames: dict[tuple[int, int | None, int | None], tuple[str, str, int | None]] = {}
        # The flat listings (dynamo_guards) of compiles whose guard tree has not come.
        self._flat: dict[tuple, GuardListing] = {}
        # Compiles whose dynamo_start did not name their code (torch < 2.5): their metrics name it.
        self._unnamed: set[tuple] = set()
        # Whether the trace has graph-break records (torch >= 2.6); before, restart reasons say them.
        self._break_records = False
        # The file of the code that called each compile's function (its record takes it).
        self._callers: dict[tuple, str | None] = {}
        # Failing guards read for a compile, held until its code is named (its dynamo_start follows).
        self._reasons: dict[tuple, tuple[GuardFailure, ...]] = {}

    def parse(self, lines: Iterable[str]) -> Iterator[Event]:
        """Every event of a whole trace, in its order. Payload lines, most of a trace (graphs, code, timing
        events), are the hot path: counted and passed over unless their record reads them, and a guard
        tree's lines taken as the log parser's hot path takes them (a counting parse keeps few kinds)."""
        counters = self.counters
        feed = self.feed
        skippable: frozenset[str] | None = None
        keep_raw = owner_manager = tally = None
        skipped = self.skipped
        for line in lines:
            if line[:1] != "\t":
                # Most records of a trace describe a tensor to tlparse (describe_tensor, _storage, _source): with
                # no record open they end nothing, and are counted without framing or decoding.
                at = line.find('] {"describe_') if self._block is None and self._on_payload is None else -1
                if at > 0:
                    kind = line[at + 4 : line.find('"', at + 4)]
                    counters.lines += 1
                    counters.torch_lines += 1
                    self.envelopes += 1
                    skipped[kind] = skipped.get(kind, 0) + 1
                    skippable = keep_raw = owner_manager = tally = None
                    continue
                events = feed(line)
                block = self._block
                skippable = block.skippable if isinstance(block, GuardBlock) else None
                keep_raw = block.keep_raw if skippable is not None else None
                owner_manager = block.owner_manager if skippable is not None else None
                tally = block.tally if skippable is not None else None
                if events:
                    yield from events
                continue
            counters.lines += 1
            counters.torch_lines += 1
            if skippable is not None:
                start = line.find("+- ")
                if start >= 0 and line[1] in "+|":  # a tree line, as TreeReader.feed tells them
                    end = line.find(":", start + 3)
                    label = line[start + 3 : end] if end > 0 else line[start + 3 :].rstrip()
                    if label.isupper():  # a leaf: tallied under the manager above it (GuardOwners)
                        tally[min((start - 1) // 2, TALLY_DEPTH)] += 1  # type: ignore[index]
                    elif "Manager" in label:
                        owner_manager((start - 1) // 2, line, end)  # type: ignore[misc]
                    if label not in skippable:
                        continue
                    if end > start + 3:
                        keep_raw(label, line[end + 1 :].strip())  # type: ignore[misc]
                        continue
            if self._block is not None:
                self._block.feed(line[1:].rstrip("\r\n"))
            elif self._payload is not None:
                self._payload.append(line[1:].rstrip("\r\n"))
        yield from self.finish()

    def feed(self, raw: str) -> list[Event]:
        """Take one line; the events of the record it ends (and of its own, when it has no payload)."""
        counters = self.counters
        counters.lines += 1
        if raw[:1] == "\t":
            counters.torch_lines += 1
            if self._block is not None:
                self._block.feed(raw[1:].rstrip("\r\n"))
            elif self._payload is not None:
                self._payload.append(raw[1:].rstrip("\r\n"))
            return []
        out = self._end_record()
        line = raw.rstrip("\r\n")
        m = _PREFIX.match(line)
        if m is None:
            if line.strip():
                counters.unknown(line)
            return out
        counters.torch_lines += 1
        self.envelopes += 1
        start = m.end() + 2
        kind = line[start : line.find('"', start)]
        if kind not in _READ or (kind == "artifact" and not any(a in line for a in _ARTIFACTS)):
            if kind in KNOWN_KINDS:
                self.skipped[kind] = self.skipped.get(kind, 0) + 1
                if kind == "artifact" and self.torch_version is None and '"torch_version"' in line:
                    self._on_payload = ("torch_version", {})
                    self._payload = []
            else:
                counters.unknown(line)
            return out
        try:
            envelope = json.loads(line[m.end() :])
        except ValueError:
            counters.unknown(line)
            return out
        if not isinstance(envelope, dict):
            counters.unknown(line)
            return out
        out.extend(self._record(kind, envelope))
        return out

    def finish(self) -> list[Event]:
        """The events of the last record and of compiles whose code was never named."""
        out = self._end_record()
        out += self._flat.values()
        self._flat.clear()
        return out + self._orphans(None)

    def _orphans(self, key: tuple | None) -> list[Event]:
        """Reasons read for compiles other than ``key`` that never started: torch writes a compile's reasons
        just before its ``dynamo_start``, so those calls were refused at a recompile limit (torch 2.5 records
        nothing else of them; 2.6+ record the refusal's metrics right after, which take the reasons first).
        At the end of the trace (``key`` None), a process killed before it compiled leaves reasons too:
        they are a recompile announced, as in a cut log."""
        out: list[Event] = []
        for other in [k for k in self._reasons if k != key]:
            out += self._refused(other, "", None, None) if key is not None else self._announced(other)[1]
        return out

    def _announced(self, key: tuple) -> tuple[tuple[GuardFailure, ...] | None, list[Event]]:
        """A compile that never started, seen, and the recompile its reasons announce (when any were read)."""
        cid = self._cid(key)
        name, file, line = self._frames.get(self._frame_key(key), ("", "", None))
        failures = self._reasons.pop(key, None)
        out = self._seen_compile(cid)
        if failures is not None:
            out.append(RecompileAnnounced(cid, name, file, line, failures, self._process))
        return failures, out

    def _refused(self, key: tuple, limit: str, value: int | None, torch_reason: str | None) -> list[Event]:
        """A call refused at a recompile limit (``limit`` "" and ``value`` None: not known), as the log's limit
        warning says it: its last reason torch's own, else the newest entry's failure its reasons gave."""
        failures, out = self._announced(key)
        name, file, line = self._frames.get(self._frame_key(key), ("", "", None))
        last = torch_reason.splitlines()[0] if torch_reason else _last_reason(failures or ())
        out.append(LimitWarning(self._cid(key), limit, value, name, file, line, last, self._process))
        return out

    def gaps(self) -> tuple[str, ...]:
        """What this trace cannot show, by torch's version (:data:`~guarddiag.model.TRACE_GAPS`): a trace
        that recompiled without a single reason record nor a dynamo config is torch < 2.5's, which records
        no call refused at a recompile limit."""
        return ("limit_refusals",) if self._saw_recompile and not self._saw_reasons and not self._saw_config else ()

    # One record's envelope.

    def _record(self, kind: str, envelope: dict) -> list[Event]:
        body = envelope.get(kind)
        key = _key(envelope)
        if kind == "str":
            if isinstance(body, list) and len(body) == 2 and isinstance(body[0], str) and isinstance(body[1], int):
                self._strings[body[1]] = body[0]
                if self._torch_dir is None:
                    self._torch_dir = _torch_dir(body[0])
            return []
        if kind == "dynamo_start":
            return (self._orphans(key) if self._reasons else []) + self._start(key, body)
        if kind == "compilation_metrics":
            return (self._orphans(key) if self._reasons else []) + self._metrics(key, body)
        if key is None:
            return []
        cid = self._cid(key)
        if kind == "dynamo_cpp_guards_str":
            self._listed.add(self._gen_key(key))
            self._flat.pop(key, None)  # the tree is the listing the log prints
            self._block = GuardBlock(cid, self._process, self._keep_guards, self._locations, self._seen_guards)
            return self._seen_compile(cid)
        if kind == "dynamo_guards":
            self._listed.add(self._gen_key(key))
            self._on_payload, self._payload = ("dynamo_guards", envelope), []
            return self._seen_compile(cid)
        if kind == "artifact":
            name = body.get("name") if isinstance(body, dict) else None
            if name == _GRAPH_BREAK:
                self._break_records = True
                self._on_payload, self._payload = (_GRAPH_BREAK, envelope), []
            elif name == _RECOMPILE_REASONS:
                self._saw_reasons = True
                self._on_payload, self._payload = (_RECOMPILE_REASONS, envelope), []
            return []
        if kind == "create_symbol" and isinstance(body, dict):
            symbol, source = body.get("symbol"), body.get("source")
            if isinstance(symbol, str) and isinstance(source, str):
                return [*self._seen_compile(cid), SymbolCreated(cid, symbol, source, str(body.get("val", "")), self._process)]
        if kind == "guard_added_fast" and isinstance(body, dict) and isinstance(body.get("expr"), str):
            location, code = self._user_frame(body.get("user_stack"))
            return [*self._seen_compile(cid), SizeGuardAdded(cid, body["expr"].strip(), location, code, self._process)]
        return []

    def _end_record(self) -> list[Event]:
        """The events of the record whose payload just ended."""
        out: list[Event] = []
        if self._block is not None:
            out = self._block.close()
            self._block = None
        if self._on_payload is None:
            return out
        (what, envelope), payload = self._on_payload, self._payload or []
        self._on_payload, self._payload = None, None
        key = _key(envelope)
        if what == "torch_version":
            self.torch_version = _torch_version(payload)
            return out
        if key is None:
            return out
        cid = self._cid(key)
        if what == _RECOMPILE_REASONS:
            self._reasons[key] = _failures(payload)
        elif what == _GRAPH_BREAK and payload:
            block = GraphBreakBlock(cid, self._process, payload[0], channel=True)
            for text in payload[1:]:
                block.feed(text)
            out.extend(block.close())
        elif what == "dynamo_guards":
            # Held until the compile ends: a guard tree of the same compile (torch 2.4+) is the listing instead.
            self._flat[key] = GuardListing(cid, _flat_guards(payload, self._keep_guards), process=self._process)
        return out

    def _start(self, key: tuple | None, body: object) -> list[Event]:
        if key is None or not isinstance(body, dict):
            return []
        gen_key = self._gen_key(key)
        # A compile that already started (or installed guards, first attempt) starts again only after reset().
        if gen_key in self._started or (key[3] == 0 and gen_key in self._listed):
            self._generation += 1
            self._started.clear()
            self._listed.clear()
            gen_key = self._gen_key(key)
        self._started.add(gen_key)
        stack = body.get("stack")
        stack = [f for f in stack if isinstance(f, dict)] if isinstance(stack, list) else []
        top = stack[-1] if stack else {}
        file = self._file(top)
        cid = self._cid(key)
        out = self._seen_compile(cid)
        if self._torch_dir is not None and file.startswith(self._torch_dir + os.sep):
            # torch < 2.5 ends the stack in its own convert_frame: the code compiled is named by its metrics.
            self._callers[key[:3]] = self._caller(stack)
            self._unnamed.add(key[:3])
            return out
        name = top.get("name") if isinstance(top.get("name"), str) else ""
        line = top.get("line") if isinstance(top.get("line"), int) else None
        self._callers[key[:3]] = self._caller(stack[:-1])
        return out + self._named(key, cid, name, file, line)

    def _named(self, key: tuple, cid: CompileId | None, name: str, file: str, line: int | None) -> list[Event]:
        """A compile's code named: its frame's name, and the recompile announced for it."""
        self._frames[self._frame_key(key)] = (name, file, line)
        out: list[Event] = []
        failures = self._reasons.pop(key, None)
        if failures is not None:
            out.append(RecompileAnnounced(cid, name, file, line, failures, self._process))
        out.append(FrameNamed(cid, name, file, line, self._process))
        return out

    def _metrics(self, key: tuple | None, body: object) -> list[Event]:
        if not isinstance(body, dict):
            return []
        text = body.get("compile_id")
        limits = _limits(body)
        self._saw_config = self._saw_config or "dynamo_config" in body
        self._saw_recompile = self._saw_recompile or (key is not None and (key[2] or 0) > 0)
        cid = self._cid(key) if key is not None else CompileId.parse(text, self._process) if isinstance(text, str) else None
        # The record names the compile as torch's metrics do, and a run's ledger keeps it: without the attempt
        # of a restart (its envelope carries it) nor a cache generation (the ledger's reader places it).
        named = CompileId.parse(text, self._process) if isinstance(text, str) else None
        time = body.get("entire_frame_compile_time_s")
        if time is None and body.get("has_guarded_code") is False:  # torch 2.2-2.4 time a failed attempt apart
            time = body.get("dynamo_time_before_restart_s")
        record = CompileRecord(
            named if named is not None else cid,
            as_text(body.get("co_name")),
            as_text(body.get("co_filename")),
            as_whole(body.get("co_firstlineno")),
            fail_type=as_text(body.get("fail_type")),
            reason=(str(body["fail_reason"]).strip().splitlines() or [""])[0][:300] if body.get("fail_reason") else "",
            compile_s=as_seconds(time),
            recompile_limit=limits.get("recompile_limit", limits.get("cache_size_limit")),
            # A restarted attempt's metrics come under its attempt number; the call was the first attempt's.
            caller=self._callers.pop(key[:3], None) if key is not None else None,
            torch=torch_figures(
                named if named is not None else cid, body.get("recompile_reason"), body.get("guard_count"),
                body.get("guard_latency_us"), body.get("cache_size"), body.get("accumulated_cache_size"),
                body.get("recompile_user_contexts"), body.get("num_graph_breaks"),
            ),
        )
        self.records.append(record)
        out: list[Event] = []
        flat = self._flat.pop(key, None) if key is not None else None
        if flat is not None:
            out.append(flat)
        if key is not None and key[:3] in self._unnamed and record.name is not None:
            self._unnamed.discard(key[:3])
            first = (*key[:3], 0)
            out += self._named(first, self._cid(first), record.name, record.file or "", record.line)
        if key is not None and key[3] > 0 and not self._break_records and isinstance(body.get("restart_reasons"), list):
            # torch < 2.6 writes no graph-break record: a restarted attempt's reasons are its graph breaks.
            first_cid = self._cid((*key[:3], 0))
            out += [GraphBreakSeen(first_cid, "", str(r).strip().split("\n")[0], True, self._process)
                    for r in body["restart_reasons"][:1] if str(r).strip()]
        # A call refused at a recompile limit: torch records no code object for it, and no dynamo_start named it.
        if key is None or record.name is not None or self._gen_key(key) in self._started:
            return out
        limit, value = _limit_hit(str(body.get("fail_reason") or ""), limits, key[2])
        return out + self._refused(key, limit, value, record.torch.recompile_reason if record.torch is not None else None)

    # Ids and names.

    def _gen_key(self, key: tuple) -> tuple:
        return (self._generation, *key)

    def _frame_key(self, key: tuple) -> tuple[int, int | None, int | None]:
        return (self._generation, key[0], key[1])

    def _cid(self, key: tuple) -> CompileId | None:
        ca, frame, number, attempt = key
        text = f"{frame}/{number}" if ca is None else f"!{ca}/{frame}/{number}" if frame is not None else f"!{ca}"
        cid = CompileId.parse(f"{text}_{attempt}" if attempt else text, self._process)
        return cid.in_generation(self._generation) if cid is not None and frame is not None else cid

    def _seen_compile(self, cid: CompileId | None) -> list[Event]:
        if cid is None:
            return []
        first = cid.first_attempt
        if first.compile_key in self._seen:
            return []
        self._seen.add(first.compile_key)
        return [CompileSeen(first)]

    def _file(self, frame: dict) -> str:
        """A stack frame's file: interned (a number) or, in some records, written out."""
        file = frame.get("filename")
        if isinstance(file, int):
            return self._strings.get(file, "")
        return file if isinstance(file, str) else ""

    def _caller(self, stack: list) -> str | None:
        """The file of the code that called the compiled function, as a run's ledger names it: outward from
        the call, the first frame that is neither torch's nor the standard library's."""
        for frame in reversed(stack):
            file = self._file(frame) if isinstance(frame, dict) else ""
            if not file or file.startswith("<frozen "):
                continue
            if (self._torch_dir and file.startswith(self._torch_dir + os.sep)) or _STDLIB.search(file):
                continue
            return file
        return None

    def _user_frame(self, stack: object) -> tuple[str, str]:
        """The innermost user frame of a shape guard's stack, as torch's log line shows it: its file
        shortened as torch shortens it (``scenarios/model.py:5 in f``), and its code."""
        if not isinstance(stack, list) or not stack or not isinstance(stack[-1], dict):
            return "", ""
        frame = stack[-1]
        file, line, name = self._file(frame), frame.get("line"), frame.get("name")
        if not file or not isinstance(line, int):
            return "", ""
        location = f"{_shorten(file, self._torch_dir)}:{line}"
        location = f"{location} in {name}" if isinstance(name, str) else location
        code = frame.get("loc")
        return location, " ".join(code.split()) if isinstance(code, str) else ""


def _key(envelope: dict) -> tuple | None:
    """The compile an envelope belongs to: (compiled autograd id, frame id, compile number, attempt)."""
    frame, number = envelope.get("frame_id"), envelope.get("frame_compile_id")
    ca = envelope.get("compiled_autograd_id")
    if not isinstance(frame, int) or not isinstance(number, int):
        if isinstance(ca, int):
            return (ca, None, None, 0)
        return None
    attempt = envelope.get("attempt")
    return (ca if isinstance(ca, int) else None, frame, number, attempt if isinstance(attempt, int) else 0)


def _failures(payload: list[str]) -> tuple[GuardFailure, ...]:
    """The failing guards of a ``recompile_reasons`` artifact: a JSON list of reasons, or (torch >= 2.11,
    one reason) the reason itself; each reason a cache entry's failure, with the user stack under it."""
    text = "\n".join(payload)
    try:
        reasons = json.loads(text)
    except ValueError:
        reasons = [text]
    if isinstance(reasons, str):
        reasons = [reasons]
    if not isinstance(reasons, list):
        return ()
    return tuple(reason_failure(r) for r in reasons if isinstance(r, str) and r.strip())


def _last_reason(failures: tuple[GuardFailure, ...]) -> str:
    """A refused call's last reason as torch's limit warning says it: the newest entry's failure, ``0/7: <guard>``."""
    if not failures:
        return ""
    first = failures[0]
    return f"{first.cache_entry}: {first.text}" if first.cache_entry is not None else first.text


def _flat_guards(payload: list[str], keep: frozenset[str] | None) -> tuple:
    """The guards of a ``dynamo_guards`` record (a JSON list of ``{"code": ...}``): the flat listing's."""
    try:
        raw = json.loads("\n".join(payload))
    except ValueError:
        return ()
    guards = (flat_guard(g["code"]) for g in raw if isinstance(g, dict) and isinstance(g.get("code"), str)) if isinstance(raw, list) else ()
    return tuple(g for g in guards if keep is None or g.kind in keep)


def _torch_version(payload: list[str]) -> str | None:
    try:
        raw = json.loads("\n".join(payload))
    except ValueError:
        return None
    version = raw.get("pytorch_version") if isinstance(raw, dict) else None
    return version if isinstance(version, str) else None


def _torch_dir(path: str) -> str | None:
    """torch's own folder, from one of its files (``.../site-packages/torch/_dynamo/convert_frame.py``)."""
    at = path.rfind(f"{os.sep}torch{os.sep}_")
    return path[: at + len("/torch")] if at >= 0 else None


def _shorten(file: str, torch_dir: str | None) -> str:
    """A file as torch's ``shorten_filename`` writes it: without the path it shares with torch's folder's parent."""
    if torch_dir is None:
        return file
    try:
        prefix = os.path.commonpath([file, torch_dir])
    except ValueError:
        return file
    return file[len(prefix) + 1 :] if prefix not in ("", os.sep) else file


def _limits(body: dict) -> dict[str, int]:
    """The recompile limits in force (``recompile_limit``, ``accumulated_recompile_limit``; ``cache_size_limit``
    and ``accumulated_cache_size_limit`` before torch 2.6), from the dynamo config torch records with an attempt."""
    config = body.get("dynamo_config")
    if not isinstance(config, str) or "_limit" not in config:
        return {}
    try:
        values = json.loads(config)
    except ValueError:
        return {}
    if not isinstance(values, dict):
        return {}
    return {k: v for k, v in values.items() if k.endswith("_limit") and isinstance(v, int) and not isinstance(v, bool)}


def _limit_hit(reason: str, limits: dict[str, int], number: int | None) -> tuple[str, int | None]:
    """Which limit refused a call, and its value: torch >= 2.8 names it in the refusal's reason (``Limit type:``);
    else the frame's limit when the compile number reached it, the accumulated limit when not. The config's
    names are torch's of that version (``cache_size_limit`` before 2.6)."""
    named = _LIMIT_TYPE.search(reason)
    frame_limit = "recompile_limit" if "recompile_limit" in limits or "cache_size_limit" not in limits else "cache_size_limit"
    total_limit = "accumulated_" + frame_limit
    if named is not None:
        limit = named["limit"]
    elif number is not None and frame_limit in limits and number < limits[frame_limit] and total_limit in limits:
        limit = total_limit
    else:
        limit = frame_limit
    value = limits.get(limit)
    return limit, value if value is not None else _set_to(reason)


def _set_to(reason: str) -> int | None:
    m = _LIMIT_SET.search(reason)
    return int(m["value"]) if m else None
