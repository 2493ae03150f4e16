"""The diff layer on runs built from real recorded logs (tests/fixtures/logs/README.md says how)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
import yaml

from guarddiag.diff import RunDiff, cause_key, diff_runs, guard_pattern
from guarddiag.guardexpr import normalize_guard
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines
from guarddiag.render import FORMATS
from guarddiag.render.diff import DIFF_SCHEMA, incomplete, render_diffs, verdict
from guarddiag.render.words import cause_subject, cause_text, function_label
from tests.conftest import LOGS, ROOT, in_checkout


def _text(name: str) -> str:
    return in_checkout((LOGS / name).read_text(encoding="utf-8", errors="replace"))


def _run(text: str) -> Run:
    functions, stats = build_from_lines(text.splitlines(keepends=True))
    return Run(functions=functions, parse=stats)


def _log(name: str) -> Run:
    return _run(_text(name))


def _only(d: RunDiff):
    assert len(d.functions) == 1, d.functions
    return d.functions[0]


def _fresh_module_diff() -> RunDiff:
    return diff_runs(
        _log("torch-2.4.1/fresh_module_instance.log"),
        _log("torch-2.4.1/fresh_module_instance.inline1.log"),
        "baseline",
        "TORCHDYNAMO_INLINE_INBUILT_NN_MODULES=1",
    )


def test_inlining_nn_modules_removes_the_unannounced_identity_recompiles():
    d = _fresh_module_diff()
    f = _only(d)
    assert (f.name, f.line) == ("forward", 32)
    assert (f.compiles_before, f.compiles_after, f.recompiles_before, f.recompiles_after) == (12, 1, 11, 0)
    assert (f.removed, f.added, f.unchanged, f.status) == (11, 0, 0, "fixed")
    (cause,) = f.causes
    assert (cause.category, cause.source, cause.pattern) == ("identity", "self", "___check_obj_id(self, <v>)")
    assert (cause.before, cause.after) == (11, 0)
    assert (d.recompiles_before, d.recompiles_after, d.removed, d.added) == (11, 0, 11, 0)
    (line,) = verdict(d)
    assert line == (
        "TORCHDYNAMO_INLINE_INBUILT_NN_MODULES=1 removes 11 of 11 recompiles of forward "
        "(scenarios/fresh_module_instance.py:32) (identity on self); adds none"
    )


def test_the_reverse_flip_adds_them():
    d = diff_runs(_log("torch-2.4.1/fresh_module_instance.inline1.log"), _log("torch-2.4.1/fresh_module_instance.log"))
    f = _only(d)
    assert (f.removed, f.added, f.status) == (0, 11, "worse")
    assert verdict(d) == ["B adds 11 recompiles of forward (scenarios/fresh_module_instance.py:32) (identity on self)"]


@pytest.mark.parametrize(
    "name",
    sorted(p.relative_to(LOGS).as_posix() for p in LOGS.glob("torch-*/*.log")),
)
def test_a_run_against_itself_pairs_every_function(name: str):
    """Two parses of one log: every function pairs with itself (not a `gone` and a `new`), and each
    recompile is counted under exactly one cause."""
    run = _log(name)
    d = diff_runs(run, _log(name))
    assert sorted((f.name, f.line, f.recompiles_before) for f in d.functions) == sorted(
        (f.name, f.line, f.recompiles) for f in run.functions
    )
    for f in d.functions:
        assert f.recompiles_after == f.recompiles_before is not None
        assert sum(c.before for c in f.causes) == sum(c.after for c in f.causes) == f.recompiles_before
        assert (f.status, f.changed) == ("same", False)
    assert d.recompiles_before == run.recompiles
    assert verdict(d) == [f"B changes no recompile ({run.recompiles} before, {run.recompiles} after)"]


def test_equal_values_collapse_into_one_cause():
    """The 5 recompiles on self.layer_idx == 0..4 are one kind of cause, counted 5 times."""
    f = _only(diff_runs(_log("torch-2.13.0/module_int_attribute.log"), _log("torch-2.13.0/module_int_attribute.log")))
    (cause,) = f.causes
    assert (cause.category, cause.source, cause.pattern, cause.before) == ("value", "self.layer_idx", "self.layer_idx == <v>", 5)
    assert cause.cause is not None and cause_subject(cause.cause) == "value of `self.layer_idx` on argument `self`"


@pytest.mark.parametrize(
    "name",
    ["torch-2.4.1/fresh_module_instance.log", "torch-2.1.2/module_int_attribute.log", "torch-2.4.1/module_bool_attribute.log"],
)
def test_runs_that_differ_only_in_object_ids_diff_to_no_change(name: str):
    text = _text(name)
    moved = re.sub(r"\d{12,}", lambda m: str(int(m.group()) + 7_340_032), text)
    assert moved != text
    a, b = _run(text), _run(moved)
    texts = {cause_text(c) for f in a.functions for e in f.recompile_events for c in e.causes}
    assert texts.isdisjoint(cause_text(c) for f in b.functions for e in f.recompile_events for c in e.causes)
    d = diff_runs(a, b)
    assert (d.removed, d.added) == (0, 0)
    assert d.recompiles_before == d.recompiles_after > 0
    assert all(f.status == "same" for f in d.functions)
    assert verdict(d)[0].startswith("B changes no recompile")


@pytest.mark.parametrize("name", ["torch-2.13.0/tensor_shape.log", "torch-2.4.1/tensor_shape.log"])
def test_tensor_size_recompiles_with_other_sizes_match(name: str):
    text = _text(name)
    resized = re.sub(r"expected (\d+), actual (\d+)", lambda m: f"expected {int(m[1]) * 4}, actual {int(m[2]) * 3 + 5}", text)
    assert resized != text
    d = diff_runs(_run(text), _run(resized))
    f = _only(d)
    assert (f.removed, f.added, f.unchanged) == (0, 0, 2)
    tensor = next(c for c in f.causes if c.category == "tensor")
    assert tensor.pattern == "tensor 'x' size mismatch at index 0. expected <v>"


def test_tensor_causes_match_across_torch_versions():
    """torch 2.4 writes ``tensor 'L['x']'``, 2.13 ``tensor 'x'``: the same cause."""
    old = _log("torch-2.4.1/tensor_shape.log").functions[0].recompile_events[0].causes[0]
    new = _log("torch-2.13.0/tensor_shape.log").functions[0].recompile_events[0].causes[0]
    assert old.text != new.text
    assert cause_key(old) == cause_key(new) == ("tensor", "x", "tensor 'x' size mismatch at index 0. expected <v>")


def test_value_causes_match_across_torch_versions():
    d = diff_runs(_log("torch-2.4.1/recompile_limit.log"), _log("torch-2.13.0/recompile_limit.log"), "2.4.1", "2.13.0")
    f = _only(d)
    assert (f.recompiles_before, f.recompiles_after, f.limit_hit_before, f.limit_hit_after) == (7, 7, True, True)
    assert [(c.category, c.source, c.pattern, c.unchanged) for c in f.causes] == [("value", "horizon", "horizon == <v>", 7)]
    assert verdict(d) == ["2.13.0 changes no recompile (7 before, 7 after)"]


def test_a_cause_traded_for_another_is_removed_and_added():
    """torch 2.4 recompiles forward on a new ``self``; 2.13 on the value of ``self.layer_idx``."""
    d = diff_runs(_log("torch-2.4.1/module_int_attribute.log"), _log("torch-2.13.0/module_int_attribute.log"), "2.4.1", "2.13.0")
    f = _only(d)
    assert (f.removed, f.added, f.unchanged, f.status) == (5, 5, 0, "same")
    assert [(c.category, c.source, c.removed, c.added) for c in f.causes] == [("identity", "self", 5, 0), ("value", "self.layer_idx", 0, 5)]
    assert verdict(d) == [
        "2.13.0 removes 5 of 5 recompiles of forward (scenarios/module_int_attribute.py:30) (identity on self); "
        "adds 5 (value on self.layer_idx)"
    ]


def test_a_function_only_in_b_is_new_and_only_in_a_is_gone():
    full = _log("torch-2.13.0/graph_break.log")
    resume = next(f for f in full.functions if f.name.startswith("torch_dynamo_resume"))
    partial = replace(full, functions=tuple(f for f in full.functions if f is not resume))
    d = diff_runs(partial, full)
    by_name = {f.name: f for f in d.functions}
    new = by_name[resume.name]
    assert (new.status, new.compiles_before, new.recompiles_before, new.compiles_after, new.added) == ("new", None, None, 2, 1)
    assert by_name["forward"].status == "same"
    assert d.functions[0] is new  # the biggest change comes first
    assert verdict(d) == [
        "B adds 1 recompile of forward, after the graph break at line 31 (scenarios/graph_break.py) (global_state: grad mode); "
        "not compiled in A"
    ]
    gone = {f.name: f for f in diff_runs(full, partial).functions}[resume.name]
    assert (gone.status, gone.removed, gone.recompiles_after) == ("gone", 1, None)


def test_functions_in_another_checkout_match_on_the_file_base_name():
    text = _text("torch-2.13.0/module_int_attribute.log")
    elsewhere = _run(text.replace(f"{ROOT}/scenarios/", "/home/ci/checkout-2/scenarios/"))
    assert elsewhere.functions[0].file == "/home/ci/checkout-2/scenarios/module_int_attribute.py"
    d = diff_runs(_run(text), elsewhere)
    f = _only(d)
    assert (f.status, f.unchanged, f.file) == ("same", 5, f"{ROOT}/scenarios/module_int_attribute.py")


def test_a_function_on_another_line_is_another_function():
    text = _text("torch-2.13.0/module_int_attribute.log")
    moved = _run(text.replace("module_int_attribute.py:30", "module_int_attribute.py:31"))
    assert moved.functions[0].line == 31
    d = diff_runs(_run(text), moved)
    assert sorted(f.status for f in d.functions) == ["gone", "new"]


def test_ranks_are_different_functions():
    run = _log("handmade/v2_3_torchrun_ranks.log")
    keys = sorted((str(f.key.process), *f.key[1:]) for f in run.functions)
    assert keys == [("rank0", "train_step", "/workspace/train.py", 41), ("rank1", "train_step", "/workspace/train.py", 41)]
    rank0_only = replace(run, functions=tuple(f for f in run.functions if str(f.frame_ids[0].process) == "rank0"))
    d = diff_runs(rank0_only, run)
    assert sorted((function_label(f.function), f.status) for f in d.functions) == [
        ("train_step (workspace/train.py:41) [rank0]", "same"),
        ("train_step (workspace/train.py:41) [rank1]", "new"),
    ]


def test_causes_add_up_to_recompiles_when_an_event_is_missing():
    run = _log("torch-2.13.0/module_int_attribute.log")
    (f,) = run.functions
    cut = replace(run, functions=(replace(f, recompile_events=f.recompile_events[:3]),))
    g = _only(diff_runs(run, cut))
    assert sum(c.before for c in g.causes) == g.recompiles_before == 5
    assert sum(c.after for c in g.causes) == g.recompiles_after == 5
    assert (g.removed, g.added) == (2, 2)


@pytest.mark.parametrize(
    ("guard", "pattern"),
    [
        ("L['self'].layer_idx == 3", "self.layer_idx == <v>"),
        ("L['lr'] == 0.09829629131445342", "lr == <v>"),
        ("L['lr'] == -1.5e-05", "lr == <v>"),
        ("set(L['losses'].keys()) == {'aux', 'main'}", "set(losses.keys()) == <v>"),
        ("L['cfg']['activation'] == 'gelu'", "cfg['activation'] == <v>"),
        ("2 <= L['x'].size()[0]", "<v> <= x.size()[0]"),
        ("Eq(s0, 3)", "Eq(s0, <v>)"),
        ("L['self'].use_label_noise == True", "self.use_label_noise == <v>"),
        ("___check_obj_id(L['self']._modules['lin'], 140234234234)", "___check_obj_id(self.lin, <v>)"),
        ("tensor 'L['x']' size mismatch at index 1. expected 77, actual 80", "tensor 'x' size mismatch at index 1. expected <v>"),
        ("GLOBAL_STATE changed: grad_mode", "GLOBAL_STATE changed: grad_mode"),
        # torch 2.1's flat guards spell the same global state as a function of its own
        ("___is_grad_enabled()", "GLOBAL_STATE changed: grad_mode"),
        ("not ___is_grad_enabled()", "GLOBAL_STATE changed: grad_mode"),
        ("___are_deterministic_algorithms_enabled()", "GLOBAL_STATE changed: deterministic_algorithms"),
    ],
)
def test_guard_pattern(guard: str, pattern: str):
    assert guard_pattern(normalize_guard(guard)) == pattern


def test_render_json_yaml_markdown_and_table():
    diffs = [_fresh_module_diff(), diff_runs(_log("torch-2.13.0/graph_break.log"), _log("torch-2.13.0/graph_break.log"))]
    data = json.loads(render_diffs(diffs, "json"))
    assert data["schema"] == DIFF_SCHEMA
    first = data["diffs"][0]
    assert (first["before_label"], first["removed"], first["added"]) == ("baseline", 11, 0)
    f = first["functions"][0]
    assert (f["name"], f["status"], f["removed"], f["recompiles_before"], f["recompiles_after"]) == ("forward", "fixed", 11, 11, 0)
    assert f["causes"][0] == {
        "category": "identity", "source": "self", "pattern": "___check_obj_id(self, <v>)",
        "subject": "argument `self`: a different object", "before": 11, "after": 0, "removed": 11, "added": 0, "unchanged": 0,
    }
    assert first["verdict"] == [
        "TORCHDYNAMO_INLINE_INBUILT_NN_MODULES=1 removes 11 of 11 recompiles of forward "
        "(scenarios/fresh_module_instance.py:32) (identity on self); adds none"
    ]
    assert yaml.safe_load(render_diffs(diffs, "yaml")) == data

    markdown = render_diffs(diffs, "markdown")
    assert "### baseline -> TORCHDYNAMO_INLINE_INBUILT_NN_MODULES=1" in markdown
    assert re.search(r"^\| `forward \(scenarios/fresh_module_instance\.py:32\)` +\| 12 -> 1 +\| 11 -> 0 +\| +11 \|", markdown, re.M)
    assert f"- {verdict(diffs[0])[0]}" in markdown

    table = render_diffs(diffs, "table")
    assert "baseline -> TORCHDYNAMO_INLINE_INBUILT_NN_MODULES=1: 11 recompiles before, 0 after (11 removed, 0 added)" in table
    assert "  removed 11x identity: argument `self`: a different object" in table
    assert "  unchanged 1x global_state: grad mode" in table
    assert "- B changes no recompile (2 before, 2 after)" in table
    assert set(FORMATS) == {"table", "json", "yaml", "markdown"}


def test_render_refuses_an_unknown_format():
    with pytest.raises(ValueError, match="unknown report format 'html'"):
        render_diffs([_fresh_module_diff()], "html")


def test_no_change_is_credited_to_a_side_that_stopped_early():
    full = _log("torch-2.13.0/tensor_shape.log")
    stopped = replace(full, functions=(), status="failed", exit_code=1, error="ValueError: bad", error_flags=("x=1",))
    d = diff_runs(full, stopped, "baseline", "x=1")
    assert d.removed == 2
    assert incomplete(d) == ["x=1: the script failed on --flag x=1 (ValueError: bad): its error names that flag; fix or drop it"]
    assert verdict(d) == [f"no change is attributed: {incomplete(d)[0]}; its counts cover only what ran before it stopped"]
    assert json.loads(render_diffs([d], "json"))["diffs"][0]["incomplete"] == incomplete(d)
    crashed = replace(full, status="failed", exit_code=1)
    assert incomplete(diff_runs(crashed, full)) == ["A: the script failed (exit status 1)"]


def test_grad_mode_recompiles_match_between_torch_2_1_and_2_13():
    """torch 2.1 fails ``___is_grad_enabled()``, 2.13 reports ``GLOBAL_STATE changed: grad_mode``: one cause."""
    d = diff_runs(_log("torch-2.1.2/grad_mode.log"), _log("torch-2.13.0/grad_mode.log"), "2.1.2", "2.13.0")
    (f,) = [f for f in d.functions if f.function.name == "compute_loss"]
    assert (f.recompiles_before, f.recompiles_after, f.removed, f.added, f.status) == (1, 1, 0, 0, "same")
    assert [(c.category, c.source, c.pattern, c.before, c.after) for c in f.causes] == [
        ("global_state", "", "GLOBAL_STATE changed: grad_mode", 1, 1)
    ]
