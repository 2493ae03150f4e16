"""Property-based tests of the parser: it never falls over, and its counts stay sane.

The CI profile runs a bounded number of examples; `make fuzz` runs the long profile
(HYPOTHESIS_PROFILE=long, 10,000 examples per property) and records what it found.
"""

from __future__ import annotations

import os
import re
import tempfile
import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guarddiag.build import build_from_lines
from guarddiag.model import Run
from guarddiag.parse import parse_logs
from guarddiag.store import run_to_dict
from tests.conftest import LOGS

settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

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
    assert run.parse.lines >= run.parse.torch_lines >= 0 and run.parse.unrecognized >= 0
    for f in run.functions:
        assert f.compiles >= 0 and f.recompiles == max(f.compiles - 1, 0)
        assert len(f.recompile_events) <= f.recompiles
        assert all(e.causes for e in f.recompile_events)


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
    d = run_to_dict(run)
    for key in ("parse", "log_path"):
        d.pop(key)
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
    # a small record per compile, never the listings themselves.
    assert _peak(repeated(20, True)) < one + compiles * 4096
    assert _peak(repeated(20, False)) < one + compiles * 4096
