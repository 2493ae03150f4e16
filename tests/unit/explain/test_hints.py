"""Fix hints as facts, on logs recorded from the corpus scripts and scenarios (torch 2.13, eager backend).

Each hint's id, object, lines (code, where, target) and what it cannot tell are decided from the log and the
source; tests/e2e/explain/test_hints.py applies the same lines to the scripts and counts torch's compiles.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guarddiag.commands.explain import explain_lines
from guarddiag.explain.hints import HINTS, RULES, UNKNOWNS
from guarddiag.explain.model import WHERE, FixHint
from guarddiag.guardkinds import KINDS
from guarddiag.render.explain_hints import _CHOICES, _HINTS, _UNKNOWN, _WHERE, hint_text
from guarddiag.render.explain_words import explanation_data, explanation_words
from guarddiag.render.words import cause_subject
from guarddiag.sourceinfo import DATACLASS, NN_MODULE, PLAIN_OBJECT, class_kind, function_at
from tests.conftest import LOGS, ROOT, in_checkout


def _hints(log: str, function: str, source: bool = True, version: str | None = "2.13.0+cpu") -> tuple[FixHint, ...]:
    """The hints of one function; ``source``: the scripts at hand, ``version``: the torch the run record names,
    as in a user's run."""
    with (LOGS / "torch-2.13.0" / f"{log}.log").open(encoding="utf-8") as fh:
        facts = explain_lines(map(in_checkout, fh) if source else fh, torch_version=version)
    (f,) = [f for f in facts.functions if f.name == function]
    return f.hints


def _codes(h: FixHint) -> list[tuple[str, str, str]]:
    return [(line.code, line.where, line.target) for line in h.lines]


def test_a_dataclass_int_made_dynamic_is_named_in_the_dynamic_sources_setting_not_the_module_flag():
    (h,) = _hints("dataclass_config", "sample_scores")
    assert (h.hint, h.subject, h.kind) == ("dynamic_sources", "cfg.top_k", "fix")
    assert _codes(h) == [("torch.compiler.config.dynamic_sources = \"L['cfg'].top_k\"", "top_of_script", "")]
    assert h.lines[0].setting == "torch.compiler.config.dynamic_sources" and h.lines[0].value == "\"L['cfg'].top_k\""
    assert h.check == "guarddiag compare SCRIPT --flag \"compiler.dynamic_sources=L['cfg'].top_k\""
    # Without the source the facts are the same: automatic dynamic took it, so it is no nn.Module int.
    assert _hints("dataclass_config", "sample_scores", source=False)[0].hint == "dynamic_sources"


def test_a_plain_objects_int_is_no_module_int_either():
    (h,) = _hints("noise_scheduler", "denoise")
    assert h.hint == "dynamic_sources" and "L['sched'].t" in h.lines[0].code


def test_an_nn_module_int_gets_the_module_flag_with_the_dynamic_sources_choice():
    (h,) = _hints("module_int_attribute", "forward")
    assert h.hint == "allow_unspec_int_on_nn_module" and h.count == 5
    assert _codes(h) == [("torch._dynamo.config.allow_unspec_int_on_nn_module = True", "top_of_script", "")]
    assert [(c.hint, [line.code for line in c.lines]) for c in h.choices] == [
        ("dynamic_sources", ["torch.compiler.config.dynamic_sources = \"L['self'].layer_idx\""])
    ]


def test_new_tensors_of_varying_size_are_marked_before_each_call_every_one_that_changed():
    (h,) = _hints("ragged_dataloader", "train_step")
    assert h.hint == "maybe_mark_dynamic" and not h.unknown
    assert _codes(h) == [
        ("torch._dynamo.maybe_mark_dynamic(xb, 0)", "before_each_call", "xb"),
        ("torch._dynamo.maybe_mark_dynamic(yb, 0)", "before_each_call", "yb"),
    ]
    assert all(line.function == "train_step" for line in h.lines)
    assert [c.hint for c in h.choices] == ["dynamic_sources", "pad_to_buckets"]
    assert h.choices[0].lines[0].code == "torch.compiler.config.dynamic_sources = \"L['xb']:0,L['yb']:0\""
    # A log alone does not name its torch: whole tensors, which every torch with the setting reads.
    (bare,) = _hints("ragged_dataloader", "train_step", version=None)
    assert bare.choices[0].lines[0].code == "torch.compiler.config.dynamic_sources = \"L['xb'],L['yb']\""
    (padded,) = _hints("padded_batches", "forward")
    assert [line.code for line in padded.lines] == [
        "torch._dynamo.maybe_mark_dynamic(ids, 1)",
        "torch._dynamo.maybe_mark_dynamic(mask, 1)",
    ]
    assert not [line for h in (h, padded) for line in h.lines if "mark_dynamic(" in line.code and "maybe" not in line.code]


def test_a_size_kept_static_after_it_changed_says_it_cannot_tell_why_and_gives_the_choices():
    (h,) = _hints("stance_server", "inner")
    assert (h.hint, h.unknown, h.lines) == ("static_sizes", "why_static", ())
    assert [c.hint for c in h.choices] == ["dynamic_sources", "pad_to_buckets"]
    assert h.choices[0].lines[0].code == "torch.compiler.config.dynamic_sources = \"L['args'][0]:0\""


def test_a_batch_of_one_gets_size_oblivious_sizes_and_its_dim_marked():
    (h,) = _hints("last_batch_one", "score")
    assert h.hint == "size_one" and h.literal == "0"
    assert [line.setting for line in h.lines] == [
        "torch.fx.experimental._config.backed_size_oblivious",
        "torch.compiler.config.dynamic_sources",
    ]
    assert "--flag fx.backed_size_oblivious=true" in h.check and h.check.endswith("--combined")
    assert [c.hint for c in h.choices] == ["avoid_size_one"]
    assert not any("mark_unbacked" in line.code for line in h.lines)


def test_a_list_the_function_appends_to_is_no_same_length_advice():
    (h,) = _hints("history_append", "train_step")
    assert (h.hint, h.literal, h.count) == ("mutated_argument", "append", 7)
    (line,) = h.lines
    assert (line.code, line.where, line.target, line.function) == ("history.append(loss.detach())", "after_each_call", "loss", "train_step")
    assert line.at.endswith("tests/corpus/history_append.py:23")


def test_logging_with_item_inside_the_compiled_function_moves_out():
    (step,) = _hints("train_logging", "train_step")
    (resumed,) = _hints("train_logging", "torch_dynamo_resume_in_train_step_at_28")
    for h in (step, resumed):
        assert h.hint == "move_out_of_compiled"
        (line,) = h.lines
        assert (line.code, line.where, line.target, line.function) == (
            'log.info("step %d loss %.4f", step, loss.item())',
            "after_each_call",
            "loss",
            "train_step",
        )


def test_grad_mode_at_the_recompile_limit_is_never_no_fix_needed():
    hints = {h.hint: h for h in _hints("partial_loss", "step")}
    assert "ambient_state" not in hints and hints["ambient_at_limit"].kind == "note"
    smoothing = hints["steers_python"]
    assert smoothing.subject == "loss_fn.keywords['label_smoothing']" and smoothing.unknown == "value_use" and not smoothing.lines
    assert "no fix needed" not in explanation_words_of("partial_loss", "step")


def explanation_words_of(log: str, function: str) -> str:
    with (LOGS / "torch-2.13.0" / f"{log}.log").open(encoding="utf-8") as fh:
        words = explanation_words(explain_lines(map(in_checkout, fh)))
    return " ".join(h.hint for f in words.functions if f.name == function for h in f.hints)


def test_a_string_that_picks_a_path_is_a_note():
    (h,) = _hints("task_heads", "forward")
    assert (h.hint, h.kind, h.literal) == ("code_path", "note", "'sentiment'")


def test_the_json_carries_each_hint_as_values():
    with (LOGS / "torch-2.13.0" / "history_append.log").open(encoding="utf-8") as fh:
        data = explanation_data(explanation_words(explain_lines(map(in_checkout, fh))))
    (h,) = [h for f in data["functions"] for h in f["hints"]]
    assert (h["id"], h["subject"], h["kind"]) == ("mutated_argument", "history", "fix")
    (line,) = h["lines"]
    assert (line["where"], line["target"], line["function"]) == ("after_each_call", "loss", "train_step")
    assert line["place"].startswith("move from ") and "out of `train_step` to after each call" in line["place"]


def test_every_hint_unknown_and_place_has_words_and_every_family_rules():
    assert set(_HINTS) == set(HINTS)
    assert set(_CHOICES) <= set(HINTS)
    assert set(_UNKNOWN) == set(UNKNOWNS)
    assert set(_WHERE) == set(WHERE)
    assert {k.hint for k in KINDS if k.hint} == set(RULES)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("SampleConfig", DATACLASS), ("Block", NN_MODULE), ("Scheduler", PLAIN_OBJECT), ("Missing", "")],
)
def test_class_kind_reads_the_users_class(name: str, kind: str):
    files = {"SampleConfig": "dataclass_config", "Block": "regional_blocks", "Scheduler": "noise_scheduler", "Missing": "task_heads"}
    assert class_kind(str(ROOT / "tests" / "corpus" / f"{files[name]}.py"), name) == kind


def test_function_at_reads_what_a_function_changes_returns_and_binds():
    fn = function_at(str(ROOT / "tests" / "corpus" / "history_append.py"), 21)
    assert fn is not None and fn.name == "train_step" and fn.params == ("xb", "yb", "history") and fn.returned == ("loss",)
    (m,) = fn.mutations
    assert (m.name, m.how, m.statement.code, m.statement.call) == ("history", "append", "history.append(loss.detach())", True)
    assert fn.bound == ("loss",)
    # A resume function's first line is inside the user's function: the same function.
    logging_fn = function_at(str(ROOT / "tests" / "corpus" / "train_logging.py"), 28)
    assert logging_fn is not None and logging_fn.name == "train_step" and logging_fn.mutations == ()


def test_without_the_source_a_container_hint_says_it_cannot_tell_who_changes_it():
    (h,) = _hints("list_length", "fuse_pyramid", source=False)
    assert (h.hint, h.unknown) == ("same_content", "no_source")
    assert [c.hint for c in h.choices] == ["same_content", "mutated_argument"]
    (known,) = _hints("list_length", "fuse_pyramid")
    assert (known.hint, known.unknown, known.choices) == ("same_content", "", ())


# A log names its objects as it likes (a crafted or pasted log, a dict key): (log, function, the name poisoned).
_POISONED = [("ragged_dataloader", "train_step", "'xb'"), ("dataclass_config", "sample_scores", "'cfg'"),
             ("module_int_attribute", "forward", ".layer_idx")]
_CALLS = {"torch._dynamo.maybe_mark_dynamic", "torch._dynamo.mark_dynamic", "torch.tensor"}


def _poisoned_hints(log: str, function: str, target: str, name: str) -> tuple[FixHint, ...]:
    text = (LOGS / "torch-2.13.0" / f"{log}.log").read_text(encoding="utf-8")
    poisoned = target.replace(target.strip(".'"), name)
    facts = explain_lines(map(in_checkout, text.replace(target, poisoned).splitlines(keepends=True)), torch_version="2.13.0+cpu")
    return tuple(h for f in facts.functions if f.name == function for h in f.hints)


def _assert_only_what_it_says(h: FixHint) -> None:
    """Each line of a hint, parsed: one statement, calling nothing but torch's marker or torch.tensor on plain
    references, or setting a torch setting to a literal whose source entries are each one source."""
    import ast

    for line in (*h.lines, *(line for c in h.choices for line in c.lines)):
        (statement,) = ast.parse(line.code).body
        calls = [ast.unparse(n.func) for n in ast.walk(statement) if isinstance(n, ast.Call)]
        assert set(calls) <= _CALLS, line.code
        if line.setting:
            assert isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant), line.code
            assert ast.unparse(statement.targets[0]) == line.setting
            if "dynamic_sources" in line.setting:
                for entry in statement.value.value.split(","):
                    assert re.fullmatch(r"[LG]\['\w+'\](\.\w+|\['[^',\s]*'\]|\[\d+\])*(:\d+)?", entry), line.code
    if h.check and h.lines:
        # The compare that verifies it, as shown (escaped) and as bash reads it: exactly the lines' settings.
        import subprocess

        from guarddiag.explain.hints import hint_configs
        from guarddiag.render.escape import terminal

        assert terminal(h.check) == h.check and "##[" not in h.check, h.check
        words = subprocess.run(["bash", "-c", 'eval "set -- $0"; printf "%s\\0" "$@"', h.check], capture_output=True, check=True)
        flags = [w.decode() for w in words.stdout.split(b"\0")[:-1]]
        given = [flags[i + 1] for i, w in enumerate(flags) if w == "--flag"]
        wanted = [f"{n}={v}" for n, v in hint_configs(h.lines)]
        # A boolean named bare (`--flag allow_unspec_int_on_nn_module`) is flipped: the same setting.
        assert [g if "=" in g else f"{g}=true" for g in given] == wanted, (h.check, wanted)


@pytest.mark.parametrize(("log", "function", "target"), _POISONED)
@pytest.mark.parametrize("name", ['x); __import__("os").system("id"); (y', "a,b", "a b", "x # c", "x]['y", "x) or (y", "ok_name",
                                  "k##[e]$(id)`x`!", "ok_name\x1b"])
def test_a_hostile_name_in_a_log_never_becomes_a_line_that_does_something_else(log, function, target, name):
    """A name from the log that no line can hold as it is (a call, a comma, a space) gets no line; one that
    can (a plain identifier) gets its lines as before."""
    hints = _poisoned_hints(log, function, target, name)
    for h in hints:
        _assert_only_what_it_says(h)
    code = " ".join(line.code for h in hints for line in (*h.lines, *(x for c in h.choices for x in c.lines)))
    assert (name in code) == (name == "ok_name" and log != "dataclass_config"), code
    if log == "ragged_dataloader" and name != "ok_name":
        # Before: `torch._dynamo.mark_dynamic(x); __import__("os").system("id"); (y, 0)` as a line to write.
        (h,) = hints
        assert (h.hint, h.lines, h.unknown) == ("dynamic_sources", (), "unwritable")


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
               min_size=1, max_size=12))
@settings(max_examples=60, deadline=None)
def test_any_name_in_a_log_gives_only_lines_that_do_what_they_say(name):
    for log, function, target in _POISONED:
        for h in _poisoned_hints(log, function, target, name):
            _assert_only_what_it_says(h)


def test_a_compare_command_for_a_key_holding_a_workflow_marker_is_the_command_meant():
    """A dict key with `##[` (which every output rewrites) or `$(...)`: the --flag value is quoted so that the text
    shown is what bash reads (was: double quotes around `##[`, shown as `##\\[`: another value when pasted)."""
    import subprocess

    from guarddiag.explain.hints import _flag
    from guarddiag.explain.model import CodeLine
    from guarddiag.render.escape import terminal

    for key in ("##[x", "$(id)", "a`b`", "plain"):
        line = CodeLine("x", "top_of_script", setting="torch.compiler.config.dynamic_sources", value=f"\"L['d']['{key}']:0\"")
        shown = terminal(_flag(line))
        read = subprocess.run(["bash", "-c", 'eval "set -- $0"; printf "%s" "$1"', shown], capture_output=True, check=True)
        assert read.stdout.decode() == f"compiler.dynamic_sources=L['d']['{key}']:0", shown


def test_two_dims_of_one_tensor_that_changed_in_turn_each_get_their_hint():
    # tests/fixtures/causes/two_dims.py: a padded length, then a short last batch, on the same tensors.
    hints = _hints("two_dims", "classify")
    assert sorted(cause_subject(c) for h in hints for c in h.causes) == [
        "size of tensor argument `ids` at dim 0",
        "size of tensor argument `ids` at dim 1",
    ]
    assert sorted(line.code for h in hints for line in h.lines) == [
        "torch._dynamo.maybe_mark_dynamic(ids, 0)",
        "torch._dynamo.maybe_mark_dynamic(ids, 1)",
        "torch._dynamo.maybe_mark_dynamic(mask, 0)",
        "torch._dynamo.maybe_mark_dynamic(mask, 1)",
    ]


def test_hints_that_set_the_dynamic_sources_setting_each_write_every_entry_the_run_needs():
    # Two causes, two hints: a second assignment of the setting would replace the first, so each writes all four.
    hints = _hints("two_dims", "classify")
    settings = {line.code for h in hints for c in h.choices for line in c.lines if line.setting}
    assert settings == {"torch.compiler.config.dynamic_sources = \"L['ids']:1,L['mask']:1,L['ids']:0,L['mask']:0\""}


def test_a_float_automatic_dynamic_took_is_said_to_have_recompiled_once_not_to_be_baked_in():
    # tests/fixtures/causes/float_global.py: a global temperature annealed each epoch; torch compiled twice.
    (h,) = _hints("float_global", "classify")
    assert (h.hint, h.subject, h.count) == ("float_as_tensor", "TEMPERATURE", 1)
    text = hint_text(h)
    assert "one recompile" in text and "baked" not in text


@pytest.mark.parametrize(("log", "function"), [("dict_key_names", "blend"), ("dict_keys_order", "weighted")])
def test_a_dicts_keys_that_changed_get_the_keys_hint_in_their_order_also_where_torch_checked_the_length(log: str, function: str):
    # dict_keys_order: torch's first failing guard is `len(weights) != 2` where a key went; the cause says the keys.
    (h,) = [h for h in _hints(log, function) if h.causes[0].category == "container"]
    assert (h.hint, h.subject) == ("stable_keys", "weights")
    assert "in the same order" in hint_text(h)
