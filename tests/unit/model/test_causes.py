"""The cause taxonomy on failure texts torch prints (2.13 style and older)."""

from __future__ import annotations

import pytest

from guarddiag.causes import cause_from_changed_guard, classify_failure, guarded_source
from guarddiag.guardexpr import normalize_guard, readable_source
from guarddiag.ids import CompileId
from guarddiag.model import Guard
from guarddiag.render.words import cause_subject, source_words
from tests.conftest import LOGS


@pytest.mark.parametrize(
    ("text", "category", "source", "about"),
    [
        (
            "m.layer_idx == 0                       # return self.lin(x) * self.layer_idx  # s1.py:8 in forward",
            "value",
            "m.layer_idx",
            "value of `m.layer_idx` on local `m`",
        ),
        ("tensor 'x' size mismatch at index 0. expected 2, actual 3", "tensor", "x", "size of tensor local `x` at dim 0"),
        ("tensor 'L['x']' dtype mismatch. expected Float, actual Double", "tensor", "L['x']", "dtype of tensor local `x`"),
        ("tensor 'x' requires_grad mismatch. expected requires_grad=0", "tensor", "x", "requires_grad of tensor local `x`"),
        ("GLOBAL_STATE changed: grad_mode ", "global_state", "", "grad mode"),
        ("___is_grad_enabled()", "global_state", "", "grad mode"),
        ("len(d) != 1", "container", "d", "length of local `d`"),
        ("len(L['xs']) == 3", "container", "L['xs']", "length of local `xs`"),
        ("list(dict.keys(weights))[0] == 'rgb'", "container", "weights", "keys of local `weights`"),
        ("not G['activations']", "container", "G['activations']", "length of global `activations`"),
        (
            "not G['__import___main__'].activations",
            "container",
            "G['__import___main__'].activations",
            "length of global `activations` of the script",
        ),
        (
            'Duplicate tensors found: ["feats[1]", "feats[2]"]',
            "aliasing",
            "L['feats'][1]",
            "`feats[1]` and `feats[2]`: one tensor passed more than once",
        ),
        ("L['enc'] is L['dec']", "aliasing", "L['enc']", "`enc` and `dec`: one object, or two"),
        ("L['x'] is None", "value", "L['x']", "value of local `x`"),
        ("___dict_version(G['cfg']) == 12", "container", "G['cfg']", "content of global `cfg`"),
        ("___check_obj_id(L['self'], 140234234234)", "identity", "L['self']", "local `self`: a different object"),
        ("___check_type_id(L['m'], 94388580481504)", "type", "L['m']", "local `m`: another type"),
        ("2 <= L['x'].size()[0]", "dynamic_shape", "L['x']", "size guard `2 <= x.size(0)`"),
        ("G['Cfg'].scale == 2.0   # x", "value", "G['Cfg'].scale", "value of `Cfg.scale` on global `Cfg`"),
        ("___check_current_backend(140000)", "other", "", "the compiler backend"),
        ("Eq(s0, 3) and something", "other", "", "unclassified guard"),
    ],
)
def test_classify_failure(text, category, source, about):
    cause = classify_failure(text, CompileId("0", 0))
    assert (cause.category, cause.source, cause_subject(cause)) == (category, source, about)
    assert str(cause.cache_entry) == "0/0"


def test_guard_normalization_drops_ids_and_sizes():
    assert normalize_guard("___check_obj_id(L['self'], 140234234234)") == "___check_obj_id(L['self'], <id>)"
    assert normalize_guard("___check_obj_id(L['self'], 0x7f3a2b)") == "___check_obj_id(L['self'], <id>)"
    sized = "tensor 'x' size mismatch at index 0. expected <v>"
    assert normalize_guard("tensor 'x' size mismatch at index 0. expected 2, actual 3") == sized
    assert normalize_guard("tensor 'x' size mismatch at index 0. expected 4, actual 9 ") == sized
    assert normalize_guard("tensor 'x' requires_grad mismatch. expected requires_grad=0") == (
        "tensor 'x' requires_grad mismatch. expected <v>"
    )
    assert normalize_guard("L['n'] == 3") == "L['n'] == 3"  # a small value is the guard's own


def test_readable_sources_and_subjects():
    assert readable_source("L['m']._modules['lin']._parameters['weight']") == "m.lin.weight"
    assert readable_source("___odict_getitem(L['self']._modules, 'lin')") == "self.lin"
    assert source_words(guarded_source("L['x']")) == "local `x`"
    assert source_words(guarded_source("G['FLAG']")) == "global `FLAG`"
    assert source_words(guarded_source("L['m'].layer_idx")) == "`m.layer_idx` on local `m`"


def test_changed_id_match_is_identity():
    before = Guard("ID_MATCH", "L['self']", "___check_obj_id(L['self'], 1401)")
    after = Guard("ID_MATCH", "L['self']", "___check_obj_id(L['self'], 1402)")
    cause = cause_from_changed_guard(before, after)
    assert cause.category == "identity"
    assert "a different object" in cause_subject(cause)


def test_changed_global_state_names_the_key():
    before = Guard("GLOBAL_STATE", "", '___check_global_state() against {"grad_mode":true,"num_threads":2}')
    after = Guard("GLOBAL_STATE", "", '___check_global_state() against {"grad_mode":false,"num_threads":2}')
    assert cause_subject(cause_from_changed_guard(before, after)) == "grad mode"


def test_run_table_prints_exactly_as_tabulate_would():
    """render.columns replaces tabulate on the hot path only if the report stays the same."""
    from tabulate import tabulate

    from guarddiag.pipeline import build_from_lines
    from guarddiag.render.columns import simple_table
    from tests.conftest import LOGS

    headers = ["function", "compiles", "recompiles", "limit hit", "graph breaks"]
    for log in sorted(LOGS.glob("torch-*/*.log")):
        functions, _ = build_from_lines(log.read_text().splitlines(), roles=lambda *_: {})
        rows = [[f.name, f.compiles, f.recompiles, "yes" if f.limit_hit else "", len(f.graph_breaks) or ""] for f in functions]
        assert simple_table(rows, headers) == tabulate(rows, headers=headers), log


def test_a_reason_continued_on_the_next_lines_is_read_whole():
    """torch prints `Duplicate tensors found:` with the aliased sources on the lines below (a vLLM paste)."""
    text = 'Duplicate tensors found:\n  ["self.a.weight",\n   "self.b.weight"]'
    cause = classify_failure(text)
    assert (cause.category, cause_subject(cause)) == ("aliasing", "`self.a.weight` and `self.b.weight`: one tensor passed more than once")


def test_the_pasted_vllm_aliasing_reason_is_aliasing():
    from guarddiag.pipeline import parse_log
    from tests.conftest import ROOT

    (f,) = parse_log(str(ROOT / "tests" / "fixtures" / "pasted" / "035-vllm-spyre-same-frame.txt")).functions
    assert f.recompile_events[0].causes[0].category == "aliasing"


def test_torchs_own_hint_on_an_nn_module_int_is_kept_as_a_fact():
    """torch >= 2.8 ends the comment of a guard on an int read from an nn.Module with its own hint
    (recorded: tests/fixtures/logs/torch-2.13.0/module_int_attribute.log); an int of a dataclass has none."""
    line = next(
        line.split("- 0/0: ", 1)[1]
        for line in (LOGS / "torch-2.13.0" / "module_int_attribute.log").read_text().splitlines()
        if "[__recompiles]     - 0/0: self.layer_idx == 0" in line
    )
    assert classify_failure(line, CompileId("0", 0)).torch_hint == "nn_module_int"
    plain = classify_failure("cfg.top_k == 3  # vals, idx = scaled.topk(cfg.top_k, dim=-1)  # x.py:20 in f", CompileId("0", 0))
    assert plain.torch_hint == ""
