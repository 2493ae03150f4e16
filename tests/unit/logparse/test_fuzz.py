"""Property-based tests of the parser: it never falls over, and its counts stay sane.

The CI profile runs a bounded number of examples; `make fuzz` runs the long profile
(HYPOTHESIS_PROFILE=long, 10,000 examples per property) and records what it found.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from guarddiag.guardkinds import DESCRIPTIONS
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines, parse_logs
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import LOGS

NO_ROLES = lambda *_: {}  # noqa: E731 - the fuzzed logs name files that are not here

REAL = sorted(p for p in LOGS.glob("torch-*/*.log")) + sorted(LOGS.glob("handmade/*.log"))
REAL_LINES = {p.name + p.parent.name: p.read_text(encoding="utf-8", errors="replace").splitlines() for p in REAL}
ANNOUNCING = [p for p in REAL if p.parent.name == "torch-2.13.0"]
# The split property's logs: every modern recorded log, and one with torch._dynamo.reset() in it.
SPLITTABLE = ANNOUNCING
assert any(p.name == "reset_and_failures.log" for p in SPLITTABLE)


def _parse(lines):
    functions, stats = build_from_lines(lines, roles=NO_ROLES)
    return Run(functions=functions, parse=stats)


def _sane(run: Run) -> None:
    """What holds of any parse, whatever the input: counts that fit together, causes of known categories,
    and a record that reads back as the same run."""
    assert run.parse.lines >= run.parse.torch_lines >= run.parse.unrecognized >= 0
    for f in run.functions:
        assert f.compiles >= len(f.failed_compiles)
        # recompile_events are the recompiles the log shows (announced or inferred): never more than compiles - 1.
        assert len(f.recompile_events) <= f.recompiles
        for e in f.recompile_events:
            assert e.causes, e
            assert {c.category for c in e.causes} <= set(DESCRIPTIONS), e.causes
    assert run_from_dict(json.loads(json.dumps(record_dict(run_report(run))))) == run


@given(st.binary(max_size=4000))
def test_random_bytes_never_raise(data):
    _sane(_parse(data.decode("utf-8", errors="replace").splitlines(keepends=True)))


@given(st.lists(st.text(max_size=200), max_size=60))
def test_random_text_lines_never_raise(lines):
    _sane(_parse(lines))


_PREFIXES = st.sampled_from(
    [
        "",
        "[rank0]:",
        "[rank3]:",
        "V1130 07:22:30.181000 2270 torch/_dynamo/guards.py:5396] ",
        "[2023-11-06 14:54:08,549] [0/0] torch._dynamo.guards.__guards: [DEBUG] ",
        "DEBUG:torch._dynamo.guards.__recompiles:",
        "  ",
    ]
)


@st.composite
def mangled_real_log(draw):
    lines = list(REAL_LINES[draw(st.sampled_from(sorted(REAL_LINES)))])
    for _ in range(draw(st.integers(0, 12))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "swap", "truncate", "prefix", "crlf"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "prefix":
            lines[i] = draw(_PREFIXES) + lines[i]
        else:
            lines[i] += "\r\n"
    if draw(st.booleans()):
        lines = lines[: draw(st.integers(0, len(lines)))]  # cut mid-block
    return lines


@given(mangled_real_log())
def test_mangled_real_logs_never_raise(lines):
    _sane(_parse(lines))


def _comparable(run: Run) -> dict:
    d = record_dict(run_report(run))
    for key in ("parse", "log_path"):
        d.pop(key)
    d.pop("job", None)  # the pieces say they were read as pieces of one log
    d["functions"] = sorted(d["functions"], key=lambda f: (f["name"], f["file"], f["line"] or 0))
    for f in d["functions"]:
        f["frame_ids"] = sorted(f["frame_ids"])
        f["limit_hits"] = sorted(f["limit_hits"], key=str)
        f["graph_breaks"] = sorted(f["graph_breaks"], key=str)
    return d


@given(st.sampled_from(SPLITTABLE), st.data())
def test_a_log_split_anywhere_parses_to_the_same_run_in_pieces(path, data):
    """`parse a b c` of a log cut anywhere (between records, inside a record, inside a line) reads as the
    whole log, also after a torch._dynamo.reset() restarted the compile ids in an earlier piece."""
    text = path.read_text(encoding="utf-8", errors="replace")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), min_size=1, max_size=3)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, piece in enumerate(pieces):
            paths.append(os.path.join(tmp, f"{i}.log"))
            with open(paths[-1], "w", encoding="utf-8", newline="") as fh:
                fh.write(piece)
        whole = parse_logs([str(path)])
        split = parse_logs(paths)
    assert whole.functions and whole.compiles, f"{path.name}: the whole log reads as no compile at all"
    assert _comparable(split) == _comparable(whole)
    assert split.parse.lines == whole.parse.lines


def _peak(lines) -> int:
    tracemalloc.start()
    _parse(lines)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def test_memory_does_not_grow_with_the_log():
    """Guard listings are not kept: 20 copies of a guard-heavy log cost what one does, plus a little per compile."""
    base = REAL_LINES["fresh_module_instance.logtorch-2.4.1"]

    def repeated(copies: int, fresh_ids: bool):
        for c in range(copies):
            shift = c * 1000 if fresh_ids else 0
            for line in base:
                yield re.sub(r"\[0/(\d+)\]", lambda m, shift=shift: f"[0/{int(m.group(1)) + shift}]", line)

    one = _peak(repeated(1, False))
    compiles = 12 * 20
    # Fresh compile ids, or the same ids again (read as compiles after a torch._dynamo.reset()):
    # a small record per compile, never the listings themselves. A record costs about 4.0-4.4 KB
    # (the parse pauses the garbage collector, so the peak moves with what else is loaded); a kept
    # listing costs more than the 7.9 KB of log text each compile of this log is read from.
    per_compile = sum(map(len, base)) // 12
    assert _peak(repeated(20, True)) < one + compiles * per_compile * 3 // 4
    assert _peak(repeated(20, False)) < one + compiles * per_compile * 3 // 4


# Pastes: what a browser, a terminal or a Markdown editor does to a real log, or to a real paste, must
# not change which recompile messages, functions and reasons are recognised. The pastes are the corpus
# of tests/fixtures/pasted/ but for its known gaps (the excerpts the reader does not read right yet).


def _paste_index() -> dict[str, dict]:
    import yaml

    index = yaml.safe_load((LOGS.parent / "pasted" / "index.yaml").read_text(encoding="utf-8"))
    return {e["file"]: e for e in index}


PASTE_INDEX = _paste_index()


def _pastes(*but: str) -> list:
    pasted = LOGS.parent / "pasted"
    return [pasted / name for name, e in PASTE_INDEX.items() if not e.get("xfail_reason") and not set(but) & set(e["kinds"])]


MANGLEABLE = ANNOUNCING + _pastes()
# A paste a terminal already cut: its line breaks, flattened to spaces or cut again at another width,
# are no longer the cuts of one terminal.
WRAPPABLE = ANNOUNCING + _pastes("wrapped")
# A CompileProfiler table is rows and columns: flattened into one line, it is a table no more.
FLATTENABLE = ANNOUNCING + _pastes("wrapped", "profiler")


def _recognised(lines: list[str]) -> dict:
    from guarddiag.logparse.events import LimitWarning, RecompileAnnounced
    from tests.unit.logparse.test_paste import read_events

    events = read_events(lines)
    return {
        "recompiles": [
            (e.name, e.file, e.line, tuple(" ".join(f.text.split()) for f in e.failures))
            for e in events
            if isinstance(e, RecompileAnnounced)
        ],
        "limit_hits": [(e.name, e.file, e.line, " ".join(e.last_reason.split())) for e in events if isinstance(e, LimitWarning)],
    }


def _is_log(lines: list[str]) -> bool:
    from guarddiag.pipeline import read_log

    return read_log(_as_file(lines), NO_ROLES)[1].paste_messages is None


def _recognised_as_shown(path, lines: list[str]) -> dict:
    """What the unmangled file is recognised as, checked against what it shows, known without guarddiag's
    reader: a property comparing a mangled file with it then cannot pass by both reading as nothing."""
    want = _recognised(_as_file(lines))
    got = (len(want["recompiles"]), len(want["limit_hits"]))
    if path.parent.name == "pasted":  # whether it shows any: its index entry, written by reading it
        entry = PASTE_INDEX[path.name]
        assert (bool(got[0]), bool(got[1])) == (bool(entry["recompiles"]), bool(entry["limit_hits"])), (path.name, want)
    else:  # a recorded log: how many recompile messages and limit warnings torch wrote
        text = path.read_text(encoding="utf-8", errors="replace")
        assert got == (text.count("Recompiling function"), text.count("hit config.recompile_limit")), (path.name, want)
    return want


def _text_lines(path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _as_file(lines: list[str]) -> list[str]:
    return [line + "\n" for line in lines]


def _quote(lines, _draw):
    return ["> " + line for line in lines]


def _indent(lines, draw):
    pad = " " * draw(st.sampled_from([2, 4, 8]))
    return [pad + line if line else line for line in lines]


def _escape(lines, _draw):
    import html

    return [html.escape(line, quote=True) for line in lines]


@given(st.sampled_from(MANGLEABLE), st.lists(st.sampled_from([_quote, _indent, _escape]), min_size=1, max_size=3), st.data())
def test_quoting_indenting_and_escaping_a_log_or_paste_keeps_what_is_recognised(path, mangles, data):
    lines = _text_lines(path)
    mangled = lines
    for mangle in mangles:
        mangled = mangle(mangled, data.draw)
    assert _recognised(_as_file(mangled)) == _recognised_as_shown(path, lines)


def _two_messages_cut(lines: list[str], width: int) -> bool:
    """Two lines longer than WIDTH differ in their first WIDTH characters, numbers aside."""
    first = None
    for line in lines:
        if len(line) > width:
            head = re.sub(r"\d+", "0", line[:width])
            if first is None:
                first = head
            elif head != first:
                return True
    return False


@functools.cache
def _cut_widths(path) -> tuple[int, ...]:
    """The terminal widths at which a cut of the file is known as one: two lines of different messages
    were cut (a message repeated with other numbers is one message), no line is exactly a multiple of
    the width long (it would look cut and go on in the next one), and a log had a quarter of its lines
    cut (docs/log-formats.md §10: a log is taken for cut only then)."""
    lines = _text_lines(path)
    lengths = [len(line) for line in lines]
    longest = sorted(lengths, reverse=True)
    if len(longest) < 2 or longest[1] <= 41:
        return ()
    is_log = None
    widths = []
    for width in range(40, min(longest[1] - 1, 240) + 1):
        if any(n and n % width == 0 for n in lengths):
            continue
        if not _two_messages_cut(lines, width):
            continue
        pieces = sum(max(1, -(-n // width)) for n in lengths)
        if (pieces - len(lines)) * 4 < pieces:
            is_log = _is_log(lines) if is_log is None else is_log
            if is_log:
                continue
        widths.append(width)
    return tuple(widths)


def test_most_pastes_and_logs_can_be_cut_at_a_known_width():
    """The wrapping property below checks only files with such a width: most must have one."""
    cuttable = [p for p in WRAPPABLE if _cut_widths(p)]
    assert len(cuttable) * 2 > len(WRAPPABLE), (len(cuttable), len(WRAPPABLE))


# Wrappings the paste reader reads wrong, each pinned by a strict xfail below: at width 156 a cut puts
# ">  # return act(x) + 1" at the start of a line, and the reader takes that ">" for a Markdown quote
# marker (whether a ">" is a marker depends on the paste's other lines, and the reader cleans each line
# alone). Found by `make fuzz`; the reader of 284845b reads it the same way. The size guard `if x.size(0) > 64:`
# of size_guards.log (issue 25's fixture) cut at 210 is the same gap; every cut width of every wrappable file was
# tried when it came: these two are all.
_WRAP_GAPS = {("torch-2.13.0", "callable_argument.log", 156), ("torch-2.13.0", "size_guards.log", 210)}


def _wraps_alike(path: Path, width: int) -> bool:
    lines = _text_lines(path)
    wrapped = [line[i : i + width] for line in lines for i in range(0, max(len(line), 1), width)]
    return _recognised(_as_file(wrapped)) == _recognised_as_shown(path, lines)


@given(st.sampled_from(WRAPPABLE), st.data())
def test_wrapping_at_a_terminal_width_keeps_what_is_recognised(path, data):
    """A terminal cuts every line at its width; the width is only known when two lines of different
    messages were cut (_cut_widths)."""
    assume(_cut_widths(path))
    width = data.draw(st.sampled_from(_cut_widths(path)))
    assume((path.parent.name, path.name, width) not in _WRAP_GAPS)
    assert _wraps_alike(path, width)


@pytest.mark.xfail(strict=True, reason="a cut line's rest that starts with '> ' is read as a Markdown quote")
@pytest.mark.parametrize("version,name,width", sorted(_WRAP_GAPS))
def test_known_wrapping_gaps_are_still_read_wrong(version: str, name: str, width: int):
    assert _wraps_alike(LOGS / version / name, width)


def _starts_alike(got: dict, want: dict) -> bool:
    """The same messages, functions and reasons, a reason allowed to go on: a paste's own text after a
    message (a printed tensor, a sentence) joins its last reason once the line breaks are gone."""

    def same(g, w) -> bool:
        if isinstance(w, str):
            return isinstance(g, str) and g.startswith(w)
        if isinstance(w, (tuple, list)):
            return isinstance(g, (tuple, list)) and len(g) == len(w) and all(map(same, g, w))
        return g == w

    return all(same(got[k], want[k]) for k in ("recompiles", "limit_hits"))


@given(st.sampled_from(FLATTENABLE))
def test_flattening_a_log_into_one_line_keeps_what_is_recognised(path):
    """A web form joins every line with a space: a real log still reads as the same recompiles, a real
    paste as the same recompiles whose reasons may run on into the text after them."""
    lines = _text_lines(path)
    flat, whole = _recognised([" ".join(lines) + "\n"]), _recognised_as_shown(path, lines)
    assert flat == whole if path in ANNOUNCING else _starts_alike(flat, whole)


# --- long lines: time linear in the line -----------------------------------------------------------
# Lines a hostile tester built: each took one regex seconds to minutes (a search retried from every
# occurrence of its start). Parsing 4x the line must cost about 4x, not 16x: a ratio of best-of-3 times,
# so a busy machine slows both sides alike.
_GLOG = "V1130 07:22:30.181000 2270 torch/_dynamo/symbolic_convert.py:5396] [0/0] "
_GLOG_GUARDS = "V1130 07:22:30.181000 2270 torch/_dynamo/guards.py:5396] [0/0] [__guards] "
_FLAT = "[2026-11-30 09:30:52,452] [0/0] torch._dynamo.guards.__guards: [DEBUG] "
_LONG_LINES = {
    "graph break repeating ' at a'": lambda n: [_GLOG + "[__graph_breaks] Graph break in user code at" + " at a" * n],
    "flat guard, comment one long token": lambda n: [_FLAT + "GUARDS:", _FLAT + "L['x'] == 1   # " + "a" * (5 * n)],
    "flat guard, long run of spaces": lambda n: [_FLAT + "GUARDS:", _FLAT + "L['x'] == 1" + " " * (5 * n) + "x"],
    "start tracing repeated": lambda n: [_GLOG + "Step 1: torchdynamo start tracing f" + " torchdynamo start tracing f x" * n],
    "tree guard, long comment": lambda n: [_GLOG_GUARDS + "GUARDS:", _GLOG_GUARDS + "| +- EQUALS_MATCH: L['x'] == 1   # " + "a:1 in " * n],
}


def _best_of_3(work, data, clock=time.perf_counter):
    """The fastest of three runs of ``work(data)`` by ``clock`` (wall time unless told), and what the last
    run returned: a test that checks what the work made need not make it a fourth time."""
    best, made = float("inf"), None
    for _ in range(3):
        start = clock()
        made = work(data)
        best = min(best, clock() - start)
    return best, made


@settings(max_examples=len(_LONG_LINES) * 2, deadline=None)
@given(st.sampled_from(sorted(_LONG_LINES)), st.sampled_from([4000, 6000]))
def test_long_lines_parse_in_time_linear_in_their_length(kind, n):
    make = _LONG_LINES[kind]
    (small, _), (large, _) = _best_of_3(_parse, make(n)), _best_of_3(_parse, make(4 * n))
    assert large < 8 * small + 0.05, f"{kind}: {n} repeats {small:.4f} s, {4 * n} repeats {large:.4f} s"


def test_a_limit_warning_mangled_onto_another_prefix_does_not_take_back_a_compile():
    """Found by test_mangled_real_logs_never_raise: a browser glued a bracketed-date prefix with compile id
    [0/0] before the recompile-limit warning; the warning then named 0/0, a compile whose guards are
    listed, and 0/0 was counted as refused. The warning's tail (`last reason:`, under its own [0/2]) says
    which call was refused: the mangled log reads as the original, one hit at 0/2, 2 compiles."""
    original = (LOGS / "handmade" / "v2_5_windows_paths.log").read_text(encoding="utf-8").splitlines()
    lines = list(original)
    at = next(i for i, line in enumerate(lines) if "hit config.cache_size_limit" in line)
    lines[at] = "[2023-11-06 14:54:08,549] [0/0] torch._dynamo.guards.__guards: [DEBUG] " + lines[at]
    run = _parse(lines)
    _sane(run)
    (f,) = run.functions
    assert (f.compiles, len(f.recompile_events), [str(h.compile_id) for h in f.limit_hits]) == (2, 1, ["0/2"])
    assert run.functions == _parse(original).functions


# --- many compiles of one function: time linear in their number -----------------------------------
# A hostile tester's log of 20,000 compiles of one function took 71 s, a paste of 100,000 recompile
# messages 78 s: each compile asked a question of every earlier one (what they pinned, the highest
# compile number so far). Built from a real recorded log's lines, compile ids counting up: parsing 4x
# the compiles must cost about 4x (CPU time, best of 3, the tolerance of the long lines above).
_ONE_FUNCTION = REAL_LINES["tensor_dtype.logtorch-2.13.0"]


def _compiles_log(n: int) -> list[str]:
    """The log of ``n`` compiles of one function: its first compile, then its recompile to bfloat16
    again and again, each under the next compile id and naming the entry before it."""
    first = [line for line in _ONE_FUNCTION if "[0/0]" in line]
    again = [line for line in _ONE_FUNCTION if "[0/1]" in line]
    return first + [
        line.replace("[0/1]", f"[0/{k}]").replace("- 0/0:", f"- 0/{k - 1}:") for k in range(1, n) for line in again
    ]


def _recompile_messages(n: int) -> list[str]:
    """The same log's recompile message pasted ``n`` times without its prefix (as an issue shows it)."""
    message = [line.split("[__recompiles] ", 1)[1] for line in _ONE_FUNCTION if "[0/1] [__recompiles]" in line]
    return [line.replace("- 0/0:", f"- 0/{k - 1}:") for k in range(1, n + 1) for line in message]


def _paste_events(lines: list[str]) -> list:
    from guarddiag.logparse.paste import PasteReader

    reader = PasteReader()
    events = [e for line in lines for e in reader.feed(line)]
    return events + reader.finish()


def _built(events: list) -> tuple:
    from guarddiag.build import RunBuilder

    builder = RunBuilder(NO_ROLES)
    for event in events:
        builder.add(event)
    return builder.functions()


# log: the whole parse. paste: the paste reader reads a message in ~0.1 ms, which hides a quadratic
# builder below 30,000 messages; its events (read once, untimed) are built, where the compiles add up.
_MANY_COMPILES = {
    "log": (lambda n: _compiles_log(n), _parse, 1000),
    "paste": (lambda n: _paste_events(_recompile_messages(n)), _built, 4000),
}


def _cpu_best_of_3(work, data):
    """The CPU time of the fastest of three runs of ``work(data)``, and what the last run returned."""
    return _best_of_3(work, data, time.process_time)


@settings(max_examples=len(_MANY_COMPILES), deadline=None)
@given(st.sampled_from(sorted(_MANY_COMPILES)))
def test_many_compiles_of_one_function_parse_in_time_linear_in_their_number(kind):
    make, work, n = _MANY_COMPILES[kind]
    small, large = make(n), make(4 * n)
    (small_s, _), (large_s, made) = _cpu_best_of_3(work, small), _cpu_best_of_3(work, large)
    # What the timed work made: the log's compiles, or a recompile per pasted message.
    (f,) = made.functions if kind == "log" else made[0]
    assert (f.compiles, f.recompiles) == ((4 * n, 4 * n - 1) if kind == "log" else (4 * n + 1, 4 * n))
    assert large_s < 8 * small_s + 0.05, f"{kind}: {n} compiles {small_s:.4f} s, {4 * n} compiles {large_s:.4f} s"


def _ranked_log(n: int) -> list[str]:
    """A real recorded log's start of tracing and its recompile message, logged by each of n ranks one
    after another: each rank's recompile message is still open when the next rank's lines begin."""
    lines = (LOGS / "torch-2.13.0" / "class_attribute.log").read_text(encoding="utf-8").splitlines(keepends=True)
    head = [lines[1], *lines[45:51]]
    return [f"[rank{rank}]:{line}" for rank in range(n) for line in head]


def test_a_log_of_many_ranks_parses_in_time_linear_in_their_number():
    # Each framed line looked through every open record for its rank's: 4,000 ranks of a real log took 7 s, 1,000 took 1.1 s.
    n = 2000
    small, large = _ranked_log(n), _ranked_log(4 * n)
    (small_s, _), (large_s, run) = _cpu_best_of_3(_parse, small), _cpu_best_of_3(_parse, large)
    assert len(run.functions) == 4 * n
    assert large_s < 8 * small_s + 0.05, f"{n} ranks {small_s:.4f} s, {4 * n} ranks {large_s:.4f} s"


def _ranked_paste(n: int) -> list[str]:
    """A real recorded recompile message pasted as each of n ranks printed it (``[rankN]:``, no glog prefix)."""
    lines = (LOGS / "torch-2.13.0" / "class_attribute.log").read_text(encoding="utf-8").splitlines(keepends=True)
    message = [line.split("[__recompiles] ", 1)[1] for line in lines[45:51]]
    return [f"[rank{rank}]: {line}" for rank in range(n) for line in message]


def test_a_paste_of_many_ranks_builds_in_time_linear_in_their_number():
    # Each message without a compile id looked through every frame for its function's, and each function
    # left announced through every unnamed frame: 8,000 ranks took 9 s, 2,000 took 1.6 s.
    n = 2000
    small, large = _paste_events(_ranked_paste(n)), _paste_events(_ranked_paste(4 * n))
    (small_s, _), (large_s, (functions, _)) = _cpu_best_of_3(_built, small), _cpu_best_of_3(_built, large)
    assert len(functions) == 4 * n
    assert large_s < 8 * small_s + 0.05, f"{n} ranks {small_s:.4f} s, {4 * n} ranks {large_s:.4f} s"
