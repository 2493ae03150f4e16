"""Names the user knows (issue 25): a resume function by its user function and the line of its graph
break, a stack slot by the expression it holds, a wrapper by what the user compiled, a cause at the
user's line; one name per function in every report. Recorded logs of torch 2.1.2, 2.3.1, 2.4.1,
2.13.0 and 2.15.0, no torch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from guarddiag.explain import explain_events
from guarddiag.gate import Finding
from guarddiag.logparse.parser import LogParser
from guarddiag.model import Resume, StackSlot
from guarddiag.pipeline import build_from_lines, parse_log
from guarddiag.render import table
from guarddiag.render.explain_words import explanation_words
from guarddiag.render.gate import finding_message
from guarddiag.render.summary import cause_groups, function_detail_lines
from guarddiag.render.words import function_label
from guarddiag.report import record_dict, run_report
from guarddiag.resume import resume_of, slot_index
from guarddiag.sourceinfo import local_roles, stack_values
from guarddiag.store import run_from_dict
from tests.conftest import LOGS, in_checkout

RESUME_LABEL = "forward, after the graph break at line 31 (scenarios/graph_break.py)"


@pytest.mark.parametrize(
    ("name", "line", "resume"),
    [
        ("torch_dynamo_resume_in_train_step_at_19", 19, Resume("train_step", 19)),  # torch 2.2+
        ("torch_dynamo_resume_in_step_at_home_at_7", 7, Resume("step_at_home", 7)),  # `_at_` in the user's name
        ("<resume in forward>", 31, Resume("forward", 31)),  # torch 2.1
        ("<graph break in forward>", 31, Resume("forward", 31)),  # torch 2.0
        ("torch_dynamo_resume_in_torch_dynamo_resume_in_f_at_3_at_9", 9, Resume("f", 9)),
        ("forward", 31, None),
        ("resume_training", 3, None),
    ],
)
def test_a_resume_function_is_read_as_its_user_function_and_line(name, line, resume):
    assert resume_of(name, line) == resume


@pytest.mark.parametrize(
    "log",
    ["torch-2.1.2/graph_break.log", "torch-2.4.1/graph_break.log", "torch-2.13.0/graph_break.log", "torch-2.15.0/graph_break.log"],
)
def test_the_resume_function_has_one_name_in_every_torch(log):
    # torch 2.1 names it `<resume in forward>`, 2.4+ `torch_dynamo_resume_in_forward_at_31`: one label.
    run = parse_log(str(LOGS / log))
    (resume,) = [f for f in run.functions if f.resume is not None]
    assert resume.resume == Resume("forward", 31)
    assert function_label(resume) == RESUME_LABEL
    assert f"{RESUME_LABEL}: 1 recompiles" in table.render(run_report(run)).splitlines()
    # The record keeps the facts: a run read back names it alike.
    again = run_from_dict(record_dict(run_report(run)))
    assert [function_label(f) for f in again.functions] == [function_label(f) for f in run.functions]


def test_a_resume_function_of_a_pasted_2_3_log_is_named_after_its_function():
    run = parse_log(str(LOGS / "handmade" / "real_2_3_1_recompile_limit.log"))
    labels = {function_label(f) for f in run.functions}
    assert "f, after the graph break at line 12 (old/model.py)" in labels
    assert not any("torch_dynamo_resume" in label for label in labels)


def test_explain_and_run_name_every_function_alike():
    for log in ("torch-2.13.0/wrapped_callables.log", "torch-2.13.0/stack_slots.log", "torch-2.4.1/graph_break.log",
                "torch-2.1.2/graph_break.log"):
        text = in_checkout((LOGS / log).read_text())
        functions, _ = build_from_lines(text.splitlines())
        explained = explain_events(LogParser(locations=False).parse(text.splitlines(keepends=True)))
        said = explanation_words(explained).functions
        assert sorted(f.label for f in said) == sorted(function_label(f) for f in functions), log


def test_a_wrapper_is_named_by_what_the_user_compiled_and_its_section_names_the_wrapper():
    (f,) = parse_log(str(LOGS / "torch-2.13.0" / "wrapped_callables.log")).functions
    assert function_label(f) == "ema_update (causes/wrapped_callables.py), Sequential (module)"
    assert function_detail_lines(f)[0].startswith(
        "  one code object for 2 callables, torch's wrapper `inner` (_dynamo/external_utils.py:67): they share one cache"
    )


def test_a_stack_slot_is_named_by_the_expression_it_holds():
    text = in_checkout((LOGS / "torch-2.13.0" / "stack_slots.log").read_text())
    functions, _ = build_from_lines(text.splitlines())
    by_line = {f.resume.line: f for f in functions if f.resume is not None}
    # `h = self.encoder(x)`: the one call of line 30 that could break; its result is ___stack0.
    at30 = by_line[30]
    assert at30.resume == Resume("forward", 30, (StackSlot("___stack0", "self.encoder(x)"),))
    assert {g.subject for g in cause_groups(at30)} == {"size of tensor `self.encoder(x)` at dim 0"}
    # `self.head(h) + self.block(h).sum(...)`: ___stack0 is `self.head(h)` whichever call broke; ___stack1 is
    # `self.block(h)` or its `.sum(...)`: the source cannot tell, so it is said to be a value the break left.
    at31 = by_line[31]
    assert at31.resume.slots == (StackSlot("___stack0", "self.head(h)"), StackSlot("___stack1", ""))
    lines = "\n".join(function_detail_lines(at31))
    assert "size of tensor `self.head(h)` at dim 0" in lines
    assert "`___stack1` (a value the graph break at line 31 left on the stack)" in lines
    assert "___stack0" not in lines.replace("tensor '___stack0' size mismatch", "")  # torch's own words aside


def test_without_the_source_a_stack_slot_keeps_torchs_name():
    text = (LOGS / "torch-2.13.0" / "stack_slots.log").read_text()  # the neutral root: no source at hand
    functions, _ = build_from_lines(text.splitlines())
    at30 = next(f for f in functions if f.resume is not None and f.resume.line == 30)
    assert at30.resume.slots == (StackSlot("___stack0", ""),)
    said = "size of tensor `___stack0` (a value the graph break at line 30 left on the stack) at dim 0"
    assert {g.subject for g in cause_groups(at30)} == {said}


@pytest.mark.parametrize(
    ("line", "held"),
    [
        ("    y = self.block(x)\n", ("self.block(x)",)),
        ("    y = self.head(x) + self.block(x)\n", ("self.head(x)", "self.block(x)")),
        # the outer call or the inner one could have broken: the bottom slot is the callee or the result
        ("    y = self.heads[k](self.trunk(x))\n", ("", "self.trunk(x)")),
        # Python < 3.11 holds a None under a method's arguments (Dynamo's LOAD_METHOD), 3.11+ does not
        ("    y = obj.method(self.p(x), 3)\n", ("", "", "self.p(x)")),
        # 3.11+ [cat, a, b], before [cat, None, a, b]: only the fourth slot, which only the older has, is named
        ("    y = torch.cat([self.a(x), self.b(x)])\n", ("", "", "", "self.b(x)")),
        ("    total += self.loss(x)\n", ("total", "self.loss(x)")),
        ("    y = self.a(*xs)\n", ("self.a(*xs)",)),
        ("    y = self.a(*xs, self.b(x))\n", ()),  # what a starred call holds is not modelled: nothing is named
        ("    y = f'{self.a(x)}'\n", ()),
    ],
)
def test_what_each_stack_slot_holds(tmp_path, line, held):
    source = tmp_path / "m.py"
    source.write_text("def f(self, x, k, xs, obj, total):\n" + line + "    return y\n")
    assert stack_values(str(source), "f", 2) == held


def test_inside_a_loop_or_a_with_block_no_slot_is_named(tmp_path):
    # A loop's iterator, a `with`'s exit are on the stack too: what the slots hold is not read.
    source = tmp_path / "m.py"
    source.write_text("def f(self, xs):\n    for x in xs:\n        y = self.a(x)\n    with ctx():\n        z = self.b(y)\n    return z\n")
    assert stack_values(str(source), "f", 3) == ()
    assert stack_values(str(source), "f", 5) == ()
    roles = local_roles(str(source), "torch_dynamo_resume_in_f_at_3", 3)
    assert roles["xs"] == "argument" and roles.line == 3 and roles.held == ()


def test_a_cause_is_located_at_the_users_line_from_torchs_user_stack():
    # torch 2.13 comments the guard on `task` with ModuleDict.__getitem__'s line and prints the user
    # stack under the reason: the user's line is forward's.
    (f,) = parse_log(str(LOGS / "torch-2.13.0" / "module_dict_heads.log")).functions
    cause = f.recompile_events[0].causes[0]
    assert cause.location.endswith("tests/fixtures/causes/module_dict_heads.py:16 in forward")
    assert cause.code == "return self.heads[task](self.trunk(x))"
    assert (cause.inner_location, cause.inner_code) == ("", "")
    assert "      at causes/module_dict_heads.py:16 in forward: return self.heads[task](self.trunk(x))" in function_detail_lines(f)


def test_without_a_user_stack_torchs_line_is_said_to_be_torchs():
    # The same log as torch before 2.11 prints it: no "User stack trace:" under the reason.
    lines = (LOGS / "torch-2.13.0" / "module_dict_heads.log").read_text().splitlines()
    older = []
    for line in lines:
        body = line.partition("[__recompiles]")[2]
        if body.strip().startswith("- User stack trace:") or body.startswith("     -   "):
            continue
        older.append(line)
    assert len(older) < len(lines)
    functions, _ = build_from_lines(older, roles=lambda *_: {})
    cause = functions[0].recompile_events[0].causes[0]
    assert (cause.location, cause.code) == ("", "")
    assert cause.inner_location == "nn/modules/container.py:555 in __getitem__"
    detail = function_detail_lines(functions[0])
    assert (
        "      at nn/modules/container.py:555 in __getitem__: return self._modules[key] (torch's or a library's code: "
        "the log does not show the line of yours that led there)"
    ) in detail


def test_torch_2_4_pins_an_int_in_its_own_code_and_says_so():
    # torch 2.4.1 comments `L['horizon'] == 3` with Dynamo's own line: never passed off as the user's.
    run = parse_log(str(LOGS / "torch-2.4.1" / "recompile_limit.log"))
    (f,) = run.functions
    causes = [e.causes[0] for e in f.recompile_events]
    placed = {(c.location, c.inner_location) for c in causes}
    assert placed == {
        ("main/scenarios/recompile_limit.py:27 in rollout", ""),
        ("", "_dynamo/output_graph.py:452 in init_ambient_guards"),
    }
    # The group of 7 shows the user's line, which its first recompiles name.
    assert "      at main/scenarios/recompile_limit.py:27 in rollout: for _ in range(horizon):" in function_detail_lines(f)


def test_torch_2_15s_user_stack_names_the_function_its_comment_cuts_short():
    run = parse_log(str(LOGS / "torch-2.15.0" / "class_attribute.log"))
    cause = run.functions[0].recompile_events[0].causes[0]
    assert cause.location == "/home/user/project/scenarios/class_attribute.py:26 in normalize_features"
    detail = function_detail_lines(run.functions[0])
    assert any(line.startswith("      at scenarios/class_attribute.py:26 in normalize_features: ") for line in detail)


def test_a_baseline_entry_gone_from_the_run_is_named_like_the_rest():
    finding = Finding("gone", "train.py", "/w/scenarios/graph_break.py", 31, name="torch_dynamo_resume_in_forward_at_31")
    assert finding_message(finding) == f"{RESUME_LABEL}: in the baseline, not compiled in this run"


def test_a_slot_index_is_read_from_either_spelling():
    assert [slot_index(s) for s in ("L['___stack2']", "___stack0.shape", "L['x']", "G['___stack1']")] == [2, 0, None, None]


def test_an_old_record_without_resume_facts_still_names_the_resume_function():
    run = parse_log(str(LOGS / "torch-2.13.0" / "graph_break.log"))
    data = record_dict(run_report(run))
    for f in data["functions"]:
        f.pop("resume", None)  # a record written before issue 25
    again = run_from_dict(data)
    assert RESUME_LABEL in {function_label(replace(f)) for f in again.functions}


def test_torch_2_2s_resume_spelling_is_read_where_its_function_compiled_too():
    # torch 2.2 names the resume function `resume_in_forward` (resume_execution.py at v2.2.2), otherwise as
    # 2.4 logs it: the 2.4.1 log with that one name changed.
    text = (LOGS / "torch-2.4.1" / "graph_break.log").read_text().replace("torch_dynamo_resume_in_forward_at_31", "resume_in_forward")
    functions, _ = build_from_lines(text.splitlines(), roles=lambda *_: {})
    assert RESUME_LABEL in {function_label(f) for f in functions}
    # A function of the user's that happens to be called so, with no `forward` compiled, is no resume function.
    alone = "\n".join(line for line in text.splitlines() if "[0/" not in line)
    functions, _ = build_from_lines(alone.splitlines(), roles=lambda *_: {})
    assert [(f.name, f.resume) for f in functions] == [("resume_in_forward", None)]
