"""The example outputs of README.md and docs/*.md are what the commands print now (tools/readme_examples.py makes them)."""

from __future__ import annotations

import difflib
import importlib.util
import re
import sys

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("readme_examples", ROOT / "tools" / "readme_examples.py")
assert _spec and _spec.loader
tool = importlib.util.module_from_spec(_spec)
sys.modules["readme_examples"] = tool  # dataclasses look their module up while the class is made
_spec.loader.exec_module(tool)

TEXTS = {document: document.read_text(encoding="utf-8") for document in tool.documents()}
EXAMPLES = [(document, e) for document, text in TEXTS.items() for e in tool.find_examples(text)]
# docs/guard-model.md's explain example is tools/gen_guard_model.py's (tests/unit/explain/test_explain.py checks it).
_GUARD_MODEL_EXAMPLE = re.compile(r"<!-- explain-example:begin -->.*?<!-- explain-example:end -->", re.DOTALL)


@pytest.mark.parametrize("document", tool.documents(), ids=tool.document_name)
def test_every_output_block_of_a_document_is_a_marked_example(document):
    """A block showing `$ guarddiag ...` is an example, and an unmarked one would go stale unnoticed."""
    text = _GUARD_MODEL_EXAMPLE.sub("", TEXTS[document])
    shown = re.findall(r"^```[a-z]*\n\$ guarddiag .*$", text, re.MULTILINE)
    assert len(shown) == len(tool.find_examples(text)), [line.splitlines()[1] for line in shown]


def test_the_readme_and_the_docs_show_real_output():
    """The README answers its three questions by example (run, compare, check); docs/ shows the rest."""
    readme = [e.commands[-1].split()[1] for document, e in EXAMPLES if document == tool.README]
    assert {"run", "compare", "check"} <= set(readme), readme
    assert len(EXAMPLES) - len(readme) >= 8, [e.spec for _, e in EXAMPLES]
    assert tool.ROOT / "docs" / "commands.md" in tool.documents()


def test_normalise_keeps_only_what_does_not_change(tmp_path):
    out = f"torch log: {tmp_path}/.guarddiag/runs/20261201-050422-module_int_attribute-27938/torch.log\nwrote {tmp_path}\n"
    assert tool.normalise(out, tmp_path) == "torch log: .guarddiag/runs/<time>-module_int_attribute-<pid>/torch.log\nwrote .\n"


def test_compile_times_do_not_make_a_block_stale():
    a = "compile time 2.25 s, 1.49 s (66%) of it in recompiles\n"
    b = "compile time 1.90 s, 1.02 s (54%) of it in recompiles\n"
    assert tool.timeless(a) == tool.timeless(b) != tool.timeless(a.replace("recompiles", "compiles"))
    # compare's compile seconds saved by a flip: negative where the flip's run took longer.
    saved, cost = "compile time 1.40 s -> 1.14 s (saves 0.26 s)", "compile time 1.40 s -> 1.55 s (saves -0.15 s)"
    assert tool.timeless(saved) == tool.timeless(cost)


def test_rewrite_replaces_only_the_stale_block():
    text = "<!-- example: guarddiag version -->\n```\nold\n```\nkept\n<!-- example: guarddiag parse x.log -->\n```\nsame\n```\n"
    first, second = tool.find_examples(text)
    assert (first.commands, second.body) == (("guarddiag version",), "same\n")
    assert tool.rewrite(text, {first.start: "$ guarddiag version\nnew\n"}) == text.replace("old\n", "$ guarddiag version\nnew\n")


def _marks(document, example) -> list:
    """torch when the example runs a script; slow too unless it is the README's ``run`` (make test checks it and
    every example read from a recorded file; make test-slow the compares, checks and docs/ examples that run
    torch, several processes each)."""
    if not example.runs_torch:
        return []
    first_run = document == tool.README and [c.split()[1] for c in example.commands] == ["run"]
    return [pytest.mark.torch] + ([] if first_run else [pytest.mark.slow])


def _cases() -> list:
    """One case per example."""
    return [
        pytest.param(document, e, id=f"{document.stem}-{i}-{e.commands[-1].split()[1]}", marks=_marks(document, e))
        for i, (document, e) in enumerate(EXAMPLES)
    ]


@pytest.mark.parametrize(("document", "example"), _cases())
def test_the_example_is_what_its_commands_print_now(document, example):
    now = tool.produce(example)
    diff = "\n".join(difflib.unified_diff(example.body.splitlines(), now.splitlines(), tool.document_name(document), "now", lineterm=""))
    stale = f"{tool.document_name(document)}'s example `{example.spec}` is stale; run `.venv/bin/python tools/readme_examples.py`\n{diff}"
    assert tool.timeless(now) == tool.timeless(example.body), stale


def test_the_pid_in_a_process_log_name_does_not_make_a_block_stale():
    a = "log\n--------------------\ntorch.child-4546.log\n"
    b = "log\n---------------------\ntorch.child-12345.log\n"
    assert tool.timeless(a) == tool.timeless(b) != tool.timeless(a.replace("child", "main"))
