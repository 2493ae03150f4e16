"""The TORCH_TRACE reader (guarddiag/logparse/trace.py) on records cut from a real trace: torch 2.13's
scenarios/recompile_limit.py run with TORCH_TRACE (recorded whole in tests/fixtures/traces; here each
record kind once, its guard tree cut to a few lines and its metrics to the fields read, paths neutral)."""

from __future__ import annotations

import json

from guarddiag.ids import MAIN_PROCESS, CompileId, Process
from guarddiag.logparse.events import CompileSeen, FrameNamed, GuardListing, LimitWarning, RecompileAnnounced, SizeGuardAdded, SymbolCreated
from guarddiag.logparse.trace import TraceParser
from guarddiag.pipeline import LogReader

PREFIX = "V1203 17:52:55.058000 24520 torch/_dynamo/convert_frame.py:303] "
SCRIPT = "/home/user/project/scenarios/recompile_limit.py"
TORCH = "/home/user/venv/lib/python3.11/site-packages/torch"


def record(kind: str, body: object, compile_id: tuple[int, int, int] | None = None, payload: list[str] | None = None) -> list[str]:
    envelope: dict = {kind: body}
    if compile_id is not None:
        envelope.update(frame_id=compile_id[0], frame_compile_id=compile_id[1], attempt=compile_id[2])
    if payload is not None:
        envelope["has_payload"] = "31df7f498b4dc0b57f38967406de8dec"
    return [PREFIX + json.dumps(envelope) + "\n", *(f"\t{line}\n" for line in payload or ())]


def metrics(number: int, **fields: object) -> list[str]:
    config = json.dumps({"accumulated_recompile_limit": 256, "recompile_limit": 2})
    body = {"compile_id": f"0/{number}", "co_name": "rollout", "co_filename": SCRIPT, "co_firstlineno": 24, "cache_size": number,
            "accumulated_cache_size": number, "guard_count": 105, "guard_latency_us": 172, "entire_frame_compile_time_s": 0.7,
            "fail_type": None, "fail_reason": None, "has_guarded_code": True, "recompile_reason": None, "dynamo_config": config}
    body.update(fields)
    return record("compilation_metrics", body, (0, number, 0))


def start(number: int) -> list[str]:
    stack = [{"line": 37, "name": "<module>", "filename": 1, "loc": "traj = rollout(torch.randn(4, 8), horizon)"},
             {"line": 24, "name": "rollout", "filename": 1}]
    return record("dynamo_start", {"stack": stack}, (0, number, 0))


TREE = [
    "",
    "TREE_GUARD_MANAGER:",
    "+- RootGuardManager",
    "| +- GLOBAL_STATE: ___check_global_state()",
    "| +- GuardManager: source=L['horizon'], accessed_by=FrameLocalsGuardAccessor(key='horizon', framelocals_idx=1)",
    "| | +- EQUALS_MATCH: L['horizon'] == 1                                             # for _ in range(horizon):  # scenarios/recompile_limit.py:27 in rollout",  # noqa: E501
]
ONE = "0/0: horizon == 1" + " " * 45 + "# for _ in range(horizon):  # scenarios/recompile_limit.py:27 in rollout"
STACK = ["User stack trace:", f'  File "{SCRIPT}", line 27, in rollout', "    for _ in range(horizon):"]
TWO = ("0/1: horizon == 2  # for _ in range(horizon):  # scenarios/recompile_limit.py:27 in rollout "
       "(_dynamo/variables/tensor.py:2606 in evaluate_expr)")
REFUSED = ("Dynamo recompile limit exceeded\n  Explanation: Dynamo attempted to recompile the code object too many times\n\n"
           "  Developer debug context: Limit type: recompile_limit\n")


def trace() -> list[str]:
    """Three calls of rollout under recompile_limit=2: two compiles, the third call refused."""
    return [
        *record("artifact", {"name": "torch_version", "encoding": "json"},
                payload=["{", '"pytorch_version": "2.13.0+cpu",', '"oss": true', "}"]),
        *record("str", [f"{TORCH}/_dynamo/convert_frame.py", 0]),
        *record("str", [SCRIPT, 1]),
        *start(0),
        *record("dynamo_cpp_guards_str", {}, (0, 0, 0), TREE),
        *record("chromium_event", {}, (0, 0, 0), ["{", '"name": "compile_attempt_0"', "}"]),
        *metrics(0),
        # torch >= 2.11 writes a lone reason as bare text, its user stack under it.
        *record("artifact", {"name": "recompile_reasons", "encoding": "json"}, (0, 1, 0), [ONE, *STACK]),
        *start(1),
        *record("dynamo_cpp_guards_str", {}, (0, 1, 0), [line.replace("== 1", "== 2") for line in TREE]),
        *metrics(1, recompile_reason="\n".join([ONE, *STACK])),
        *record("artifact", {"name": "recompile_reasons", "encoding": "json"}, (0, 2, 0),
                ["[", json.dumps(TWO) + ",", json.dumps("\n".join([ONE, *STACK])), "]"]),
        *metrics(2, co_name=None, co_filename=None, co_firstlineno=None, fail_type="Unsupported", fail_reason=REFUSED,
                 has_guarded_code=None, recompile_reason=TWO, cache_size=None, guard_count=None, guard_latency_us=None),
    ]


def events(lines: list[str], **options: object) -> tuple[TraceParser, list]:
    parser = TraceParser(**options)  # type: ignore[arg-type]
    return parser, list(parser.parse(lines))


def test_a_compile_is_seen_named_and_listed_as_in_the_text_log():
    parser, found = events(trace())
    first = CompileId.parse("0/0")
    assert found[:3] == [CompileSeen(first), FrameNamed(first, "rollout", SCRIPT, 24), found[2]]
    assert isinstance(found[2], GuardListing) and found[2].compile_id == first
    assert parser.torch_version == "2.13.0+cpu"


def test_a_bare_reason_and_a_list_of_reasons_give_every_cache_entry_with_its_stack():
    _, found = events(trace())
    recompiles = [e for e in found if isinstance(e, RecompileAnnounced)]
    assert [r.compile_id for r in recompiles] == [CompileId.parse("0/1"), CompileId.parse("0/2")]
    bare, listed = recompiles
    assert (bare.name, bare.file, bare.line) == ("rollout", SCRIPT, 24)
    (only,) = bare.failures
    assert only.cache_entry == CompileId.parse("0/0") and only.text.startswith("horizon == 1")
    assert [(f.file, f.line, f.function, f.code) for f in only.stack] == [(SCRIPT, 27, "rollout", "for _ in range(horizon):")]
    assert [f.cache_entry for f in listed.failures] == [CompileId.parse("0/1"), CompileId.parse("0/0")]
    assert listed.failures[0].stack == () and len(listed.failures[1].stack) == 1


def test_a_call_refused_at_the_limit_is_the_limit_warning_of_its_frame():
    _, found = events(trace())
    (hit,) = [e for e in found if isinstance(e, LimitWarning)]
    assert hit == LimitWarning(CompileId.parse("0/2"), "recompile_limit", 2, "rollout", SCRIPT, 24, TWO)


def test_the_limit_a_refusal_does_not_name_is_told_by_the_compile_number():
    # fail_on_recompile_limit_hit: "Hard failure due to ..." names no limit; 0/1 is under recompile_limit=2.
    lines = [*start(0), *metrics(0),
             *metrics(1, co_name=None, co_filename=None, co_firstlineno=None, fail_type="FailOnRecompileLimitHit",
                      fail_reason="Hard failure due to fail_on_recompile_limit_hit", has_guarded_code=None)]
    (hit,) = [e for e in events(lines)[1] if isinstance(e, LimitWarning)]
    assert (hit.limit, hit.value) == ("accumulated_recompile_limit", 256)


def test_torchs_metrics_are_the_ledger_of_the_trace():
    parser, _ = events(trace())
    first, second, refused = parser.records
    assert first.torch is not None and second.torch is not None and refused.torch is not None
    figures = (first.torch.guard_count, first.torch.guard_latency_us, first.torch.cache_size)
    assert (first.name, first.line, figures) == ("rollout", 24, (105, 172.0, 0))
    assert first.recompile_limit == 2 and first.compile_s == 0.7 and first.caller == SCRIPT
    assert second.torch.recompile_reason is not None and second.torch.recompile_reason.startswith("0/0: horizon == 1")
    assert refused.name is None and refused.fail_type == "Unsupported" and refused.reason == "Dynamo recompile limit exceeded"
    assert refused.torch.guard_count is None and refused.torch.recompile_reason is not None  # torch's figures, absent ones None


def test_the_run_of_a_trace_counts_what_torch_did():
    functions, stats = LogReader(trace=MAIN_PROCESS).read(trace()).result()
    (rollout,) = functions
    assert (rollout.compiles, rollout.recompiles, len(rollout.limit_hits)) == (2, 1, 1)
    assert rollout.limit_hits[0].outcome == "eager"
    assert stats.trace_records == 13 and stats.unrecognized == 0 and stats.lines == len(trace())


def test_a_process_tags_every_id():
    _, found = events(trace(), process=Process.of_rank(3))
    assert {e.compile_id.process for e in found if getattr(e, "compile_id", None)} == {Process.of_rank(3)}


def test_a_reset_starts_a_new_generation_of_compile_ids():
    lines = [*start(0), *record("dynamo_cpp_guards_str", {}, (0, 0, 0), TREE), *metrics(0), *start(0)]
    named = [e.compile_id for e in events(lines)[1] if isinstance(e, FrameNamed)]
    assert [str(c) for c in named] == ["0/0", "0~1/0"]


def test_shape_records_read_as_the_log_prints_them():
    user = [{"line": 27, "name": "rollout", "filename": 1, "loc": "for _ in range(horizon):"}]
    lines = [*record("str", [f"{TORCH}/_dynamo/convert_frame.py", 0]), *record("str", [SCRIPT, 1]), *start(1),
             *record("create_symbol", {"symbol": "s89", "val": "2", "vr": "[-int_oo, int_oo]", "source": "L['horizon']",
                                       "user_stack": user}, (0, 1, 0)),
             *record("guard_added_fast", {"expr": "Eq(s89, 2)", "user_stack": user}, (0, 1, 0))]
    found = events(lines)[1]
    cid = CompileId.parse("0/1")
    assert SymbolCreated(cid, "s89", "L['horizon']", "2") in found
    # The file shortened as torch's own log line does: without what it shares with torch's folder.
    assert SizeGuardAdded(cid, "Eq(s89, 2)", "project/scenarios/recompile_limit.py:27 in rollout", "for _ in range(horizon):") in found


def test_kinds_torch_is_not_known_to_write_and_torn_lines_are_counted_never_fatal():
    lines = [*trace()[:4], PREFIX + '{"a_kind_from_the_future": {}}\n', PREFIX + '{"dynamo_start": {"stack": [\n', "not a record\n"]
    parser, _ = events(lines)
    assert parser.counters.unrecognized == 3
    assert parser.skipped == {"artifact": 1}  # torch_version: known, its payload read


def test_records_read_are_not_decoded_when_their_kind_is_not_needed():
    parser, _ = events(trace())
    assert parser.skipped == {"chromium_event": 1, "artifact": 1}  # the torch_version artifact: its payload alone is read


def test_a_25_refusal_is_the_reasons_of_a_compile_that_never_started():
    # torch 2.5 writes only the refused call's reasons (no metrics of it): the next compile's start shows it never ran.
    lines = [*record("str", [SCRIPT, 1]), *start(0), *metrics(0, dynamo_config=None),
             *record("artifact", {"name": "recompile_reasons", "encoding": "json"}, (0, 1, 0), ["[", json.dumps(ONE), "]"]),
             *record("dynamo_start", {"stack": [{"line": 3, "name": "other", "filename": 1}]}, (1, 0, 0))]
    found = events(lines)[1]
    (hit,) = [e for e in found if isinstance(e, LimitWarning)]
    assert (hit.compile_id, hit.name, hit.line, hit.value) == (CompileId.parse("0/1"), "rollout", 24, None)
    assert hit.last_reason == "0/0: " + ONE.removeprefix("0/0: ")
    assert [e.compile_id for e in found if isinstance(e, RecompileAnnounced)] == [CompileId.parse("0/1")]


def test_a_26_refusal_without_torchs_reason_says_the_newest_entrys_failure():
    # torch 2.6 records the refusal's metrics but no recompile_reason (2.7+): its last reason is the artifact's first.
    lines = [*start(0), *metrics(0),
             *record("artifact", {"name": "recompile_reasons", "encoding": "json"}, (0, 1, 0), ["[", json.dumps(TWO), "]"]),
             *metrics(1, co_name=None, co_filename=None, co_firstlineno=None, fail_type="Unsupported", fail_reason=REFUSED,
                      has_guarded_code=None)]
    (hit,) = [e for e in events(lines)[1] if isinstance(e, LimitWarning)]
    assert hit.last_reason == TWO and hit.limit == "recompile_limit"
