"""Logs of other torch versions: real recordings (2.1.2, 2.3.1, 2.4.1) and source-derived ones.

tests/fixtures/logs/handmade/*.md explains each handmade log line by line and gives the
expected result that these tests assert; docs/log-formats.md has the per-version facts.
"""

from __future__ import annotations

import pytest

from guarddiag.pipeline import build_from_lines
from guarddiag.render.words import cause_subject
from tests.conftest import LOGS

HANDMADE = LOGS / "handmade"

# log -> {(function name, file suffix): (compiles, limit hits)}
EXPECTED = {
    "real_2_1_2_recompile_limit": {("f", "model.py"): (2, 1), ("<resume in f>", "model.py"): (1, 0)},
    "real_2_1_2_report_guard_failures": {("f", "model.py"): (2, 1)},
    "real_2_3_1_recompile_limit": {("f", "model.py"): (2, 1), ("torch_dynamo_resume_in_f_at_12", "model.py"): (1, 0)},
    "v2_0_legacy_guards_cache_limit": {("forward", "model.py"): (2, 1), ("<graph break in forward>", ""): (1, 0), ("", ""): (0, 0)},
    "v2_13_compiled_autograd_ids": {
        ("step", "ca.py"): (2, 0),
        ("forward", "<eval_with_key>.2"): (1, 0),
        ("forward", "<eval_with_key>.5"): (2, 0),
    },
    "real_2_13_recompiles_verbose": {("f", "t4.py"): (3, 0)},
    "v2_5_windows_paths": {("forward", r"C:\Users\dev\proj\model.py"): (2, 1)},
    "v2_1_windows_tuple_repr": {
        ("forward", r"C:\Users\dev\proj\model.py"): (2, 0),
        ("forward", r"C:\Users\dev\o'neil\model.py"): (2, 0),  # its record uses double quotes
    },
}


def _parse(name: str):
    with (HANDMADE / f"{name}.log").open(encoding="utf-8") as fh:
        return build_from_lines(fh)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_handmade_counts(name):
    functions, _ = _parse(name)
    got = {}
    for f in functions:
        key = next(k for k in EXPECTED[name] if k[0] == f.name and f.file.endswith(k[1]))
        got[key] = (f.compiles, len(f.limit_hits))
    assert got == EXPECTED[name]


def test_torchrun_ranks_are_kept_apart():
    with (HANDMADE / "v2_3_torchrun_ranks.log").open() as fh:
        functions, _ = build_from_lines(fh)
    by_rank = {str(f.frame_ids[0].process): f for f in functions}
    assert set(by_rank) == {"rank0", "rank1"}
    assert all(f.compiles == 2 and len(f.limit_hits) == 1 for f in by_rank.values())


def test_old_tuple_repr_recompile_reason_is_classified():
    functions, _ = _parse("real_2_1_2_report_guard_failures")
    (f,) = functions
    (event,) = f.recompile_events
    assert event.logged and event.causes[0].category == "value" and event.causes[0].source == "L['n']"
    assert f.limit_hits[0].last_reason == "L['n'] == 2"


def test_torch_2_4_module_instances_compile_12_times_unannounced():
    """The case behind the project: 12 instances, 12 compiles, no `Recompiling function` line."""
    log = LOGS / "torch-2.4.1" / "fresh_module_instance.log"
    text = log.read_text()
    assert "Recompiling function" not in text
    functions, _ = build_from_lines(text.splitlines())
    (f,) = [f for f in functions if f.name == "forward"]
    assert f.compiles == 12 and f.recompiles == 11
    assert all(not e.logged for e in f.recompile_events)
    assert {e.causes[0].category for e in f.recompile_events} == {"identity"}
    assert all("`self`" in cause_subject(e.causes[0]) for e in f.recompile_events)


@pytest.mark.parametrize("log", sorted((LOGS / "torch-2.1.2").glob("*.log")), ids=lambda p: p.stem)
def test_torch_2_1_logs_without_the_dynamo_channel_still_count_right(log):
    """Captured with TORCH_LOGS=guards,recompiles only: listings have compile ids, recompiles have names."""
    import json

    lines = [ln for ln in log.read_text().splitlines() if "torchdynamo start tracing" not in ln]
    functions, _ = build_from_lines(lines, roles=lambda *_: {})
    truth = json.loads(log.with_name(log.stem + ".truth.json").read_text())
    recompiled = {f["co_name"]: f["compiles"] for f in truth["functions"] if f["compiles"] > 1}
    ours = {f.name: f.compiles for f in functions if f.name in recompiled}
    assert ours == recompiled
    assert sum(f.compiles for f in functions) == truth["total_compiles"]


def _interleaved_2_3(with_dynamo: bool) -> list[str]:
    """Two torchrun ranks of torch 2.3 recompile one function for different reasons; each rank logs
    another line after its message (which ends it), and rank 1 starts its recompile first. Recompile
    messages of 2.1-2.3 carry no compile id (docs/log-formats.md)."""
    r0 = "[rank0]:V0412 13:05:21.100000 140211653502784 torch/_dynamo/guards.py:1425] [__recompiles] "
    r1 = "[rank1]:V0412 13:05:21.101000 139870921852736 torch/_dynamo/guards.py:1425] [__recompiles] "

    def traced(rank: int, cid: str) -> str:
        prefix = f"[rank{rank}]:I0412 13:05:2{rank}.102000 1398 torch/_dynamo/logging.py:55] [{cid}] "
        return prefix + "Step 1: torchdynamo start tracing train_step /workspace/train.py:41"

    def guards(rank: int, cid: str) -> list[str]:
        p = f"[rank{rank}]:V0412 13:05:2{rank}.803000 1398 torch/_dynamo/guards.py:1076] [{cid}] [__guards] "
        return [p + "GUARDS:", p.replace("1076", "1085") + "___check_type_id(L['batch'], 94338409146560)  # x  # train.py:42"]

    lines = [traced(0, "0/0"), traced(1, "0/0")] if with_dynamo else []
    lines += guards(0, "0/0") + guards(1, "0/0")
    lines += [
        r0 + "Recompiling function train_step in /workspace/train.py:41",
        r0 + "    triggered by the following guard failure(s):",
        r0 + "    - L['step'] == 0                                               # if step % 100 == 0:  # train.py:42",
        r0.replace("guards.py:1425] [__recompiles] ", "convert_frame.py:700] ") + "skipping: wrapper (reason: in skipfiles)",
        r1 + "Recompiling function train_step in /workspace/train.py:41",
        r1 + "    triggered by the following guard failure(s):",
        r1 + "    - tensor 'L['x']' size mismatch at index 0. expected 8, actual 4",
        r1.replace("guards.py:1425] [__recompiles] ", "convert_frame.py:700] ") + "skipping: wrapper (reason: in skipfiles)",
    ]
    lines += ([traced(1, "0/1")] if with_dynamo else []) + guards(1, "0/1")
    lines += ([traced(0, "0/1")] if with_dynamo else []) + guards(0, "0/1")
    return lines


@pytest.mark.parametrize("with_dynamo", [True, False], ids=["dynamo-channel", "no-dynamo-channel"])
def test_interleaved_ranks_pair_recompile_messages_within_their_rank(with_dynamo):
    functions, _ = build_from_lines(_interleaved_2_3(with_dynamo))
    by_rank = {str(f.frame_ids[0].process): f for f in functions}
    assert {r: [c.category for e in f.recompile_events for c in e.causes] for r, f in by_rank.items()} == {
        "rank0": ["value"],
        "rank1": ["tensor"],
    }


@pytest.mark.parametrize(
    ("body", "readable"),
    [
        ("('Recompiling function f in /x.py:1', 'triggered by nothing')", True),  # no colon after "triggered by"
        ("('Recompiling function f in /x.py:1', '" + "x" * 2_000_000 + "')", True),  # one 2 MB element
        ("('Recompiling function f in /x.py:1', " + "(" * 50_000 + ")" * 50_000 + ")", False),  # past the recursion limit
        ("('Recompiling function f in /x.py:1', [" + "[" * 200_000 + "]" * 200_000 + "])", False),
        ("('Recompiling function f in /x.py:1', " + "-" * 100_000 + "1)", False),  # MemoryError in the parser
        ("('Recompiling function f in /x.py:1', " + "+".join(["1"] * 100_000) + ")", False),  # RecursionError
    ],
    ids=["no-colon", "2mb-element", "nested-50k", "nested-200k", "100k-minus", "100k-plus"],
)
def test_hostile_torch_2_1_tuple_lines_never_raise(body: str, readable: bool):
    """IndexError, RecursionError and MemoryError came out of guarddiag's parser on these lines."""
    line = "[2023-11-06 14:54:08,549] [0/1] torch._dynamo.guards.__recompiles: [DEBUG] " + body
    functions, stats = build_from_lines([line], roles=lambda *_: {})
    assert stats.torch_lines == 1 and stats.unrecognized == (0 if readable else 1)
    (f,) = functions
    assert f.name == ("f" if readable else "") and f.compiles == 2
