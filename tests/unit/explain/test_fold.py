"""The default view of explain folds what needs no action and never what matters (guarddiag/explain/fold.py),
on real logs recorded from torch 2.13.0; ``--full`` folds nothing."""

from __future__ import annotations

import pytest

from guarddiag.commands.explain import explain_lines
from guarddiag.explain import Explanation
from guarddiag.explain.facts import user_name
from guarddiag.explain.model import FoldedObject
from guarddiag.render.explain import render_explanation
from guarddiag.render.explain_words import explanation_words
from tests.conftest import LOGS, ROOT, in_checkout

LOGS_2_13 = sorted(p.stem for p in (LOGS / "torch-2.13.0").glob("*.log"))


def _facts(name: str, full: bool = False) -> Explanation:
    with (LOGS / "torch-2.13.0" / f"{name}.log").open(encoding="utf-8") as fh:
        return explain_lines(map(in_checkout, fh), full=full)


@pytest.mark.parametrize("log", LOGS_2_13)
def test_nothing_that_matters_is_folded_and_full_folds_nothing(log: str):
    short, full = _facts(log), _facts(log, full=True)
    for f, g in zip(short.functions, full.functions, strict=True):
        rows = [o for e in f.entries for o in e.objects]
        own = {s for o in rows if not isinstance(o, FoldedObject) for s in o.sources}
        # Alike rows that all matter may share a range row (explained like each of them), with nothing else.
        ranges = [o for o in rows if isinstance(o, FoldedObject) and set(o.sources) & set(f.matters)]
        assert all(o.kind == "repeated" and set(o.sources) <= set(f.matters) for o in ranges), f.label
        assert set(f.matters) <= own | {s for o in ranges for s in o.sources}, f.label
        # Folding loses no object: every source --full shows is in a row of the default view.
        assert {s for e in g.entries for o in e.objects for s in o.sources} == {s for o in rows for s in o.sources}
        assert not any(isinstance(o, FoldedObject) for e in g.entries for o in e.objects)
        assert all(e.folded == 0 for e in g.entries)


def test_repeated_elements_fold_into_one_row_and_what_changes_stays_a_row():
    """A list of feature maps whose length grows: its elements are alike, its length is the cause."""
    (f,) = explanation_words(_facts("list_length")).functions
    rows = {o.name: o for o in f.entries[0].objects}
    feats = rows["`features[0..1]` (2 objects)"]
    assert not feats.matters and feats.detail.count("tensor float32") == 2
    (length,) = [o for o in f.entries[0].objects if "length" in o.detail]
    assert length.matters and any("recompiles" in s for s in length.recompiles)
    assert f.entries[0].folded == 2
    (g,) = explanation_words(_facts("list_length", full=True)).functions
    assert {"`features[0]`", "`features[1]`"} <= {o.name for o in g.entries[0].objects}


def test_rows_that_change_between_entries_are_explained_and_the_rest_are_one_line():
    """.eval() under no_grad: the BatchNorm and Dropout training flags differ between the entries."""
    facts = _facts("eval_no_grad")
    text = render_explanation(facts, "table")
    (f,) = explanation_words(facts).functions
    changed = {o.name for o in f.entries[0].objects if o.matters}
    # The training flags change; the buffers and track_running_stats are not read in eval under no_grad.
    assert changed == {"`training` of 2 objects under `self`", "3 buffers under `self`", "`self.body.1.track_running_stats`"}
    assert "calling .train()/.eval()" in text
    assert "`x`: tensor float32 [8, 6] requires_grad=False" in text
    assert "another dtype, device or requires_grad for `x`" not in text
    assert "another dtype, device or requires_grad for `x`" in render_explanation(_facts("eval_no_grad", full=True), "table")


def test_a_different_function_passed_each_call_is_among_the_differences():
    """block(x, gelu) then block(x, swish): torch checks `act` by the id() of its code."""
    (f,) = explanation_words(_facts("callable_argument")).functions
    assert f.entries[1].differs == ("`act`: another function or module (id)",)
    (row,) = [o for o in f.entries[0].objects if o.how == "identity (code)"]
    assert row.matters


def test_the_scripts_own_globals_are_named_as_the_script_names_them():
    assert user_name("G['__import___main__'].inputs") == "inputs"
    assert user_name("G['__import_mylib_dot_layers'].SCALE") == "mylib.layers.SCALE"


def _wrapped_callables_here() -> Explanation:
    """The recorded log with its neutral roots laid out as on the recording machine: the venv inside the
    project (torch names the script by its path below the directory both share: ``tests/fixtures/...``)."""
    text = (LOGS / "torch-2.13.0" / "wrapped_callables.log").read_text(encoding="utf-8")
    return explain_lines(in_checkout(text.replace("/home/user/venv/", f"{ROOT}/venv/")).splitlines())


def test_the_no_grad_wrappers_args_are_named_by_the_wrapped_functions_parameters():
    """ema_update(avg, params, decay) compiled under @torch.no_grad() runs in torch's `inner(*args)`:
    args[2] is `decay`; the compiled nn.Sequential's entries of the same wrapper keep `args[0]`."""
    (f,) = explanation_words(_wrapped_callables_here()).functions
    first = {o.name for o in f.entries[0].objects}
    assert "argument `decay`" in first and "`args[2]`" not in first
    assert "`avg[0..1]` (2 objects)" in first or {"`avg[0]`", "`avg[1]`"} <= first
    assert f.entries[1].differs == ("argument `decay`: dynamic float (type checked, value not)",)
    assert any("`args[0]`" in d for d in f.entries[2].differs)  # the Sequential's input, not ema_update's `avg`
    assert "value of argument `decay`" in " ".join(f.causes)
    # The wrapper serves the Sequential too: its label names both, as `guarddiag parse` of this log does.
    assert f.label == "ema_update (causes/wrapped_callables.py), Sequential (module)"


def test_args_keep_torchs_name_when_the_wrapped_function_cannot_be_read():
    """The same log where its files are not at hand: nothing is guessed."""
    (f,) = explanation_words(_facts("wrapped_callables")).functions
    assert "`args[2]`" in {o.name for o in f.entries[0].objects}
