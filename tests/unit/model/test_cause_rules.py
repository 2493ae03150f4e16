"""The cause that matters (#25 section 3), on recorded torch logs: the decisive entry at a recompile limit and
under no_grad, a dict's keys as a cause of their own, and each symbolic-size guard its own cause.

The recordings are tests/fixtures/causes/{label_smoothing,dict_keys_order,size_guards}.py (size_guards on eager
and on inductor), made by tests/fixtures/record_logs.py; tests/e2e/run/test_causes.py checks the same on real runs
against torch's own count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from guarddiag.guardexpr import size_condition
from guarddiag.guardkinds import SHAPE_FORM_NAMES, shape_form
from guarddiag.logparse.events import GuardListing, LimitWarning, RecompileAnnounced
from guarddiag.logparse.parser import LogParser
from guarddiag.model import Cause, DictKeys, FunctionSummary
from guarddiag.pipeline import parse_log
from guarddiag.render.summary import cause_group_line, cause_groups, function_detail_lines
from guarddiag.render.words import cause_subject, keys_sentence, limit_sentence
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import LOGS

V213 = LOGS / "torch-2.13.0"
SMOOTHING = V213 / "label_smoothing.log"
SMOOTHING_SOURCE = "loss_fn.keywords['label_smoothing']"


def _function(path, name: str | None = None) -> FunctionSummary:
    functions = parse_log(str(path)).functions
    return next(f for f in functions if name is None or f.name == name)


# --- the decisive entry: at the limit and under no_grad ---------------------------------------------------------


def test_torch_names_grad_mode_first_and_last():
    """The premise: torch prints the newest entry first, and train and eval calls alternate: its first reason is
    grad mode for every call (the 7 recompiles and the refused 9th), and so is the limit warning's `last reason`."""
    events = list(LogParser().parse(SMOOTHING.open(encoding="utf-8")))
    announced = [e for e in events if isinstance(e, RecompileAnnounced)]
    assert len(announced) == 8 and all("grad_mode" in a.failures[0].text for a in announced)
    (warning,) = [e for e in events if isinstance(e, LimitWarning)]
    assert "grad_mode" in warning.last_reason


def test_each_recompile_goes_to_the_change_against_the_entry_that_would_have_matched():
    """Six of the seven recompiles come from `label_smoothing` (torch with it held recompiles once: the e2e test
    measures it), one from grad mode (the first eval call)."""
    f = _function(SMOOTHING)
    assert f.recompiles == 7
    decisive = Counter(e.causes[0].source if e.causes[0].source else cause_subject(e.causes[0]) for e in f.recompile_events)
    assert decisive == {SMOOTHING_SOURCE: 6, "grad mode": 1}
    assert [g.count for g in cause_groups(f)] == [6, 1]
    assert cause_groups(f)[0].cause.source == SMOOTHING_SOURCE


def test_a_tie_goes_to_the_thing_that_takes_more_values():
    """The eval call of epoch 1 (0/3) differs from 0/2 (train, same smoothing) only in grad mode and from 0/1
    (eval, the smoothing before) only in `label_smoothing`: the smoothing takes 5 values across the entries,
    grad mode 2. torch's own first reason is 0/2's (grad mode)."""
    f = _function(SMOOTHING)
    event = next(e for e in f.recompile_events if e.compile_id.number == 3)
    assert str(event.causes[0].cache_entry) == "0/1" and event.causes[0].source == SMOOTHING_SOURCE
    assert {str(c.cache_entry) for c in event.causes} == {"0/0", "0/1", "0/2"}
    assert event.also == ()


def test_the_limit_hit_goes_through_the_same_rule():
    """The refused call has no guard listing: which entry it differs from least is read from every entry's reason."""
    (hit,) = _function(SMOOTHING).limit_hits
    assert "grad_mode" in hit.last_reason
    assert hit.cause is not None and hit.cause.source == SMOOTHING_SOURCE
    assert "on value of `loss_fn.keywords['label_smoothing']`" in limit_sentence(hit)


def test_the_entry_with_fewest_changes_still_decides_before_variety():
    """decisive_entry: the EMA copy's entry (grad mode off) is newest; the model's own entry differs only in
    `temperature`, the copy's in grad mode and `temperature`."""
    f = _function(V213 / "decisive_entry.log")
    assert cause_subject(f.recompile_events[1].causes[0]).startswith("value of `self.temperature`")
    (event,) = _function(V213 / "eval_no_grad.log").recompile_events
    assert cause_subject(event.causes[0]) == "grad mode"


# --- a dict's keys ---------------------------------------------------------------------------------------------


def test_a_dicts_keys_are_a_cause_of_their_own():
    """dict_keys_order: another order, a key gone (torch says `len(weights) != 2`), a key renamed."""
    f = _function(V213 / "dict_keys_order.log")
    causes = [e.causes[0] for e in f.recompile_events]
    assert all(c.category == "container" and cause_subject(c).startswith("keys of ") for c in causes), causes
    assert [c.keys for c in causes] == [
        DictKeys(("'cls'", "'box'"), ("'box'", "'cls'")),
        DictKeys(("'cls'", "'box'"), ("'cls'",)),
        DictKeys(("'cls'",), ("'cls'", "'mask'")),
    ]
    assert causes[1].text.startswith("len(weights) != 2")
    assert [keys_sentence(c.keys) for c in causes if c.keys is not None] == [
        "the same keys in another order (keys were 'cls', 'box', now 'box', 'cls')",
        "'box' removed (keys were 'cls', 'box', now 'cls')",
        "'mask' added (keys were 'cls', now 'cls', 'mask')",
    ]
    (group,) = cause_groups(f)
    assert cause_group_line(group).startswith("3x container: keys of ")
    lines = function_detail_lines(f)
    assert "      keys: 'box' removed (keys were 'cls', 'box', now 'cls')" in lines


@pytest.mark.parametrize(
    ("version", "first", "ordered"),
    [
        ("2.1.2", DictKeys(("'main'",), ("'aux'", "'main'"), ordered=False), False),
        ("2.4.1", DictKeys(("'main'",), ("'main'", "'aux'")), True),
        ("2.13.0", DictKeys(("'main'",), ("'main'", "'aux'")), True),
        ("2.15.0", DictKeys(("'main'",), ("'main'", "'aux'")), True),
    ],
)
def test_dict_keys_across_torch_versions(version: str, first: DictKeys, ordered: bool):
    """scenarios/dict_keys.py: torch 2.4 and later say `len(losses) != 1` (2.4 without naming the entry: its reasons
    are matched to the entries by position, newest first); torch 2.1 guards the key set."""
    f = _function(LOGS / f"torch-{version}" / "dict_keys.log")
    cause = f.recompile_events[0].causes[0]
    assert cause_subject(cause).startswith("keys of ") and cause.keys == first
    assert "'aux' added" in keys_sentence(cause.keys)


def test_what_the_listings_do_not_tell_is_said():
    assert keys_sentence(DictKeys(("'a'", "'b'"), None)) == (
        "the entry's keys were 'a', 'b'; the call's keys are not in the log (it has no guard listing of its own)"
    )
    assert keys_sentence(DictKeys(None, None)) == "which keys changed: the guard listings in the log do not say"
    assert keys_sentence(DictKeys(("'a'", "'b'"), ("'b'", "'a'"), ordered=False)).startswith("the listings show the same keys")


# --- each symbolic-size guard its own cause ----------------------------------------------------------------------

# function -> (form, condition, where) of its recompile on a size guard, on eager and on inductor.
SIZE_CAUSES = {
    "pad_to_multiple": ("divisibility", "x.size(1) % 8 == 0", "size_guards.py:24 in pad_to_multiple"),
    "first_tokens": ("lower_bound", "5 <= x.size(1)", "size_guards.py:31 in first_tokens"),
    "clip_batch": ("range", "2 <= x.size(0) <= 64", "size_guards.py:36 in clip_batch"),
    "normalize": ("size_0_1", "2 <= x.size(0)", "size_guards.py:43 in normalize"),
    # torch's listing and failure text name no line for it (`# (unknown var s23, please file a bug)`): the line is
    # the one its shape environment logged when it added the guard (`eval Eq(s27, s23) [guard added] ...`).
    "add_bias": ("relation", "bias.size(0) == x.size(1)", "size_guards.py:48 in add_bias"),
    "split_heads": ("relation", "heads.size(0) != x.size(1)", "size_guards.py:53 in split_heads"),
}
# Inductor bounds the reduction's size itself (_inductor/codegen/cpp.py, need_use_acc_helper).
INDUCTOR = {"normalize": ("range", "2 <= x.size(0) <= 4096", "size_guards.py:43 in normalize")}


@pytest.mark.parametrize("log", ["size_guards.log", "size_guards.inductor.log"])
def test_each_size_guard_is_a_cause_with_its_form_condition_and_line(log: str):
    expected = {**SIZE_CAUSES, **(INDUCTOR if "inductor" in log else {})}
    run = parse_log(str(V213 / log))
    for f in run.functions:
        (shape,) = [e.causes[0] for e in f.recompile_events if e.causes[0].category == "dynamic_shape"]
        form, condition, where = expected[f.name]
        assert (shape.shape, shape.condition) == (form, condition), f.name
        assert shape.location.endswith(where) if where else shape.location == "", (f.name, shape.location)
    # The facts go into the record and come back.
    again = run_from_dict(record_dict(run_report(run)))
    assert [e.causes for f in again.functions for e in f.recompile_events] == [e.causes for f in run.functions for e in f.recompile_events]


def test_two_size_guards_are_two_groups_with_their_own_words():
    """Two recompiles on different size guards of one function are two causes, never one "size relation" line."""
    run = parse_log(str(V213 / "size_guards.log"))
    shaped = [e for f in run.functions for e in f.recompile_events if e.causes[0].category == "dynamic_shape"]
    f = replace(run.functions[0], recompile_events=tuple(shaped[:2]))
    lines = [cause_group_line(g) for g in cause_groups(f)]
    assert lines == [
        "1x dynamic_shape: a branch on a size's remainder: the entry holds only while `x.size(1) % 8 == 0`",
        "1x dynamic_shape: a lower bound on a size: the entry holds only while `5 <= x.size(1)`",
    ]
    relation = next(f for f in run.functions if f.name == "add_bias")
    assert "      at tests/fixtures/causes/size_guards.py:48 in add_bias: return (x + bias).relu()" in function_detail_lines(relation)


def test_the_line_behind_a_relation_comes_from_the_shape_environment():
    """The premise (torch's text names no line) and the events that tell it: a symbol per source, a guard over symbols."""
    from guarddiag.ids import CompileId
    from guarddiag.logparse.events import SizeGuardAdded, SymbolCreated

    text = (V213 / "size_guards.log").read_text(encoding="utf-8")
    assert "- 4/1: bias.size()[0] == x.size()[1]  # (unknown var s23, please file a bug)" in text
    events = [e for e in LogParser().parse(text.splitlines()) if isinstance(e, (SizeGuardAdded, SymbolCreated))]
    assert SymbolCreated(CompileId("4", 1), "s23", "L['bias'].size()[0]", "12") in events
    where = "tests/fixtures/causes/size_guards.py:48 in add_bias"
    assert SizeGuardAdded(CompileId("4", 1), "Eq(s27, s23)", where, "return (x + bias).relu()") in events
    # A guard torch suppressed is none; one torch's own code added (inductor's bound) names no user line.
    inductor = [e for e in LogParser().parse((V213 / "size_guards.inductor.log").read_text(encoding="utf-8").splitlines())]
    added = [e for e in inductor if isinstance(e, SizeGuardAdded)]
    assert not [e for e in added if "suppressed" in e.expr]
    assert SizeGuardAdded(CompileId("3", 1), "s77 <= 4096", "", "") in added


# (torch's spelling, the condition, its form): torch 2.13's from the recordings; torch <= 2.2 prints guards with
# sympy's StrPrinter (ShapeGuardPrinter(StrPrinter) in torch/fx/experimental/symbolic_shapes.py): Eq, Ne, Mod.
SPELLINGS = [
    ("(x.size()[1] % 8) == 0", "x.size(1) % 8 == 0", "divisibility"),
    ("(L['x'].size()[1] % 8) != 0", "x.size(1) % 8 != 0", "divisibility"),
    ("Eq(Mod(L['x'].size()[1], 8), 0)", "x.size(1) % 8 == 0", "divisibility"),
    ("2 <= L['x'].size()[0]", "2 <= x.size(0)", "size_0_1"),
    ("5 <= x.size()[1]", "5 <= x.size(1)", "lower_bound"),
    ("L['x'].size()[0] <= 64", "x.size(0) <= 64", "upper_bound"),
    ("2 <= x.size()[0] <= 4096", "2 <= x.size(0) <= 4096", "range"),
    ("y.size()[0] == x.size()[1]", "y.size(0) == x.size(1)", "relation"),
    ("Eq(L['y'].size()[0], L['x'].size()[1])", "y.size(0) == x.size(1)", "relation"),
    ("Ne(L['heads'].size()[0], L['x'].size()[1])", "heads.size(0) != x.size(1)", "relation"),
    ("L['x'].size()[0] == 3", "x.size(0) == 3", "specialized"),
    ("x.size()[1] != 5", "x.size(1) != 5", "excluded"),
    ("L['x'].stride()[0] == L['x'].size()[1]", "x.stride(0) == x.size(1)", "layout"),
    ("(5*L['x'].size()[1]) == (5*L['heads'].size()[0]*(L['x'].size()[1] // L['heads'].size()[0]))",
     "(5*x.size(1)) == (5*heads.size(0)*(x.size(1) // heads.size(0)))", "expression"),
    ("L['self']._modules['enc'].pos.size()[0] <= 512", "self.enc.pos.size(0) <= 512", "upper_bound"),
]


@pytest.mark.parametrize(("spelled", "condition", "form"), SPELLINGS)
def test_size_guard_spellings(spelled: str, condition: str, form: str):
    assert size_condition(spelled) == condition
    assert shape_form(condition) == form
    assert form in SHAPE_FORM_NAMES


def test_a_record_with_an_unknown_shape_form_is_refused():
    with pytest.raises(ValueError, match="shape 'wobbly' is not one of"):
        Cause("dynamic_shape", "", "", "", shape="wobbly")


def test_every_condition_explain_says_is_a_guard_torch_installed():
    """explain never invents a relation: each condition it names for a dynamic entry is one of the entry's listed
    size guards (in the user's spelling), and it says "no recompile" for another size only with the conditions."""
    from guarddiag.commands.explain import explain_lines
    from guarddiag.render.explain_words import explanation_words

    for log in ("size_guards.log", "size_guards.inductor.log"):
        text = (V213 / log).read_text(encoding="utf-8")
        listed: dict[str, set[str]] = {}
        for event in LogParser().parse(text.splitlines()):
            if isinstance(event, GuardListing) and event.compile_id:
                listed[str(event.compile_id)] = {size_condition(g.expr) for g in event.all_guards() if g.kind == "LAMBDA_GUARD"}
        words = explanation_words(explain_lines(text.splitlines()))
        said = 0
        for f in words.functions:
            for entry in f.entries:
                for o in entry.objects:
                    for sentence in (*o.recompiles, *o.no_recompile):
                        if "size(" not in sentence or "dynamic" in sentence:
                            continue
                        conditions = sentence.split("`")[3::2] if sentence.startswith("another size") else sentence.split("`")[1::2]
                        assert set(conditions) <= listed[entry.compile_id], (log, entry.compile_id, sentence)
                        said += len(conditions)
                    dynamic = [s for s in o.no_recompile if s.startswith("another size") and "% 8" in o.detail]
                    assert all("that keeps" in s for s in dynamic), dynamic
        assert said > 20


def test_a_refused_calls_suppositions_that_another_reason_refutes_fall():
    """Without variety to break ties, the refused call of label_smoothing still goes to the smoothing: supposing it were
    an eval entry with only grad mode changed is refuted by the train entry of the same epoch, whose reason is the
    smoothing (the call had that entry's grad mode, so its smoothing differed). torch's order alone says grad mode."""
    from guarddiag.build import RunBuilder
    from guarddiag.causes import classify_failure
    from guarddiag.pins import decisive_refused, entry_numbers

    builder = RunBuilder()
    for event in LogParser().parse(SMOOTHING.open(encoding="utf-8")):
        builder.add(event)
    (frame,) = [f for f in builder._frames.values() if f.limit_hits]
    reasons = tuple(classify_failure(f.text, f.cache_entry) for f in frame.announced[8])
    against = entry_numbers([c.cache_entry for c in reasons], sorted(frame.pins))
    assert cause_subject(reasons[0]) == "grad mode"
    chosen = decisive_refused(reasons, frame.pins, against, lambda what: 0)
    assert chosen is not None and reasons[chosen].source == SMOOTHING_SOURCE


def test_a_stack_slot_that_decides_a_recompile_is_not_also_listed_as_what_else_changed():
    """A resume function's slot (`___stack0`) is a local, though torch's guard helpers start with `___` too: the
    decisive cause's object was listed again under `also` (one as `___stack0`, one as `L['___stack0']`)."""
    resumed = [f for f in parse_log(str(V213 / "stack_slots.log")).functions if f.resume is not None and f.recompiles]
    assert resumed
    for f in resumed:
        for e in f.recompile_events:
            assert all(a.source != "L['___stack0']" for a in e.also), (e.causes[0].source, e.also)
