"""Rank divergence on real torchrun logs (tests/fixtures/logs/torch-2.13.0/torchrun, recorded by
tests/fixtures/distributed/record_torchrun.py from diverge_worker.py: 2 and 4 gloo ranks on the CPU,
every rank's lines interleaved behind torch's ``[rankN]:`` prefix)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from guarddiag.config import Settings
from guarddiag.divergence import rank_divergence, ranks_in
from guarddiag.errors import OK, REGRESSION
from guarddiag.gate import evaluate
from guarddiag.ids import Process
from guarddiag.model import Run
from guarddiag.pipeline import build_from_lines, parse_logs
from guarddiag.render import render
from guarddiag.render.gate import render_check, render_junit
from guarddiag.render.words import cause_subject, rank_cause_words
from guarddiag.report import run_report, run_reports
from tests.conftest import FIXTURES, LOGS, in_checkout
from tests.unit.reports import reports

JOBS = LOGS / "torch-2.13.0" / "torchrun"


def _run(name: str) -> Run:
    text = in_checkout((JOBS / f"{name}.log").read_text(encoding="utf-8"))
    functions, stats = build_from_lines(text.splitlines())
    return Run(functions=functions, parse=stats, source="parse")


def _truth(name: str) -> dict[int, int]:
    """torch's own compile count per rank, written by each worker beside the log."""
    ranks = json.loads((JOBS / f"{name}.truth.json").read_text(encoding="utf-8"))["ranks"]
    return {int(r): sum(f["compiles"] for f in t["functions"]) for r, t in ranks.items()}


@pytest.mark.parametrize("name", ["alike4", "branch4", "shape2", "shape2.unnamed"])
def test_counts_per_rank_equal_torchs(name: str):
    run = _run(name)
    counted: dict[int, int] = {}
    for f in run.functions:
        where = f.process.job_rank
        assert where is not None, f"{f.process}: every compile of a torchrun log belongs to a rank"
        counted[where[1]] = counted.get(where[1], 0) + f.compiles
    assert counted == _truth(name)


def test_ranks_that_compile_alike_do_not_diverge():
    run = _run("alike4")
    assert ranks_in(run) == {"": (0, 1, 2, 3)}
    assert rank_divergence(run) == ()
    text = render(run_report(run), "table")
    assert "rank divergence: none (ranks 0, 1, 2, 3 compiled every function alike)" in text
    assert text.startswith("4 compiled functions in 4 processes (4 ranks), 4 compiles, 0 recompiles")


def test_one_rank_on_another_branch_is_named_with_its_cause():
    (d,) = rank_divergence(_run("branch4"))
    assert (d.function.name, d.usual.ranks, d.usual.compiles, d.usual.recompiles) == ("forward", (0, 1, 3), 1, 0)
    (odd,) = d.unusual
    assert (odd.ranks, odd.compiles, odd.recompiles) == ((2,), 2, 1)
    assert tuple(rank_cause_words(c.cause, c.also) for c in odd.causes) == ("value of `self.scaled` on argument `self`",)
    text = render(run_report(_run("branch4")), "table")
    assert (
        "  forward (distributed/diverge_worker.py:27): rank 2 recompiled it 1 time "
        "(value of `self.scaled` on argument `self`); ranks 0, 1, 3 did not"
    ) in text.splitlines()


def test_a_different_batch_shape_on_one_rank():
    (d,) = rank_divergence(_run("shape2"))
    groups = [(g.ranks, g.recompiles, tuple(cause_subject(c.cause) for c in g.causes)) for g in d.groups]
    assert groups == [((0,), 0, ()), ((1,), 1, ("size of tensor argument `x` at dim 0",))]


def test_a_rank_whose_frames_the_log_does_not_name_is_not_known_not_absent():
    """Without TORCH_LOGS=dynamo, rank 0's one compile is an unnamed frame: whether it compiled
    `forward` cannot be known, so it is neither "never compiled it" nor "did not recompile"."""
    run = _run("shape2.unnamed")
    (d,) = rank_divergence(run)
    assert d.unknown == (0,)
    assert [g.ranks for g in d.groups] == [(1,)]
    text = render(run_report(run), "table")
    assert "rank 0: not known (the log does not name every frame compiled there" in text
    assert "never compiled" not in text and "did not" not in text


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "yaml"])
def test_every_format_has_the_section(fmt: str):
    out = render(run_report(_run("branch4")), fmt)
    if fmt in ("json", "yaml"):
        data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        (job,) = data["rank_divergence"]
        assert job["ranks"] == [0, 1, 2, 3]
        (f,) = job["functions"]
        assert [g["ranks"] for g in f["groups"]] == [[0, 1, 3], [2]]
        assert f["groups"][1]["causes"] == ["value of `self.scaled` on argument `self`"]
    else:
        assert "rank 2 recompiled it 1 time (value of `self.scaled` on argument `self`); ranks 0, 1, 3 did not" in out


def test_a_single_process_run_has_no_section():
    run = _run("branch4")
    only = replace(run, functions=tuple(f for f in run.functions if str(f.process) == "rank2"))
    assert "rank divergence" not in render(run_report(only), "table")
    assert json.loads(render(run_report(only), "json"))["rank_divergence"] == []


def test_rank_names():
    assert Process.parse("rank3").job_rank == ("", 3)
    assert Process.parse("nodeA/rank3").job_rank == ("nodeA", 3)
    assert Process.parse("child2").job_rank is None and Process.parse("").job_rank is None
    assert Process.parse("child1:rank3").job_rank is None  # a rank's line in another process's log


def test_check_shows_divergence_and_fails_on_it_only_when_asked(tmp_path: Path):
    runs = {"train.py": _run("branch4")}
    shown = evaluate(run_reports(runs), None, Settings(root=tmp_path, max_recompiles=5))
    (finding,) = [f for f in shown.findings if f.kind == "rank_divergence"]
    assert not finding.failing and shown.exit_code == OK
    assert finding.function is not None and str(finding.function.process) == "rank2"
    assert "not failing: --fail-on-rank-divergence makes it fail" in render_check(shown, "table")

    gated = evaluate(run_reports(runs), None, Settings(root=tmp_path, max_recompiles=5, fail_on_rank_divergence=True))
    assert gated.exit_code == REGRESSION
    text = render_check(gated, "table")
    assert text.splitlines()[-1] == "FAILED: 1 rank divergence(s)"
    data = json.loads(render_check(gated, "json"))
    (f,) = [f for f in data["findings"] if f["kind"] == "rank_divergence"]
    assert f["failing"] and f["divergence"]["groups"][1]["ranks"] == [2]
    # JUnit: the failure sits on rank 2's test case, the rank that diverged.
    junit = render_junit(gated)
    assert re.search(r'<testcase [^>]*name="forward \(distributed/diverge_worker.py:27\) \[rank2\]"[^>]*>\s*<failure', junit)


def test_alike_ranks_pass_the_gate(tmp_path: Path):
    settings = Settings(root=tmp_path, max_recompiles=0, fail_on_rank_divergence=True)
    result = evaluate(run_reports({"train.py": _run("alike4")}), None, settings)
    assert result.exit_code == OK and not [f for f in result.findings if f.kind == "rank_divergence"]


def test_ranks_that_compiled_a_function_alike_are_one_row_and_one_section():
    table = render(run_report(_run("branch4")), "table").splitlines()
    rows = [line for line in table if line.startswith("forward (")]
    assert [row.split("  ")[0] for row in rows] == [
        "forward (distributed/diverge_worker.py:27) [rank2]",
        "forward (distributed/diverge_worker.py:27) [ranks 0, 1, 3]",
        "forward (distributed/diverge_worker.py:27) [rank2]: 1 recompiles",
    ]
    alike = render(run_report(_run("alike4")), "table").splitlines()
    assert [line.split() for line in alike if line.startswith("forward (")] == [
        ["forward", "(distributed/diverge_worker.py:27)", "[ranks", "0,", "1,", "2,", "3]", "1", "0"]
    ]
    # The record keeps every rank.
    assert len(json.loads(render(run_report(_run("alike4")), "json"))["functions"]) == 4
    assert "| `forward (distributed/diverge_worker.py:27) [ranks 0, 1, 3]` |" in render(run_report(_run("branch4")), "markdown")


def test_ranks_that_recompiled_alike_share_one_section():
    from guarddiag.render.divergence import shown_functions

    run = _run("branch4")
    # Ranks 0 and 3 recompiled on rank 2's cause too: one section "each", apart from rank 1.
    odd = next(g for g in run.functions if str(g.process) == "rank2").recompile_events
    two = tuple(replace(f, recompile_events=odd, compiles=2) if str(f.process) in ("rank0", "rank3") else f for f in run.functions)
    shown = shown_functions(replace(run, functions=two))
    assert [s.label.rpartition(" [")[2] for s in shown] == ["ranks 0, 2, 3]", "rank1]"]
    text = render(run_report(replace(run, functions=two)), "table")
    assert "forward (distributed/diverge_worker.py:27) [ranks 0, 2, 3]: 1 recompiles each" in text.splitlines()


def test_the_setting_comes_from_pyproject_and_the_environment(tmp_path: Path):
    from guarddiag.config import load_settings

    (tmp_path / "pyproject.toml").write_text("[tool.guarddiag]\nfail_on_rank_divergence = true\n", encoding="utf-8")
    assert load_settings(tmp_path, {}, {}).fail_on_rank_divergence is True
    assert load_settings(tmp_path, {"GUARDDIAG_FAIL_ON_RANK_DIVERGENCE": "0"}, {}).fail_on_rank_divergence is False
    assert load_settings(tmp_path, {}, {"fail_on_rank_divergence": False}).fail_on_rank_divergence is False


def test_compare_says_what_a_configuration_did_to_the_divergence():
    """Two real jobs standing in for a baseline run and a flipped one: rank 2's branch recompile in
    the baseline, none in the other configuration."""
    from guarddiag.compare import ComparePlan, Variant, VariantResult, build_report
    from guarddiag.flags import Catalog
    from guarddiag.render.compare import render_compare

    base, flipped = Variant("baseline", "python"), Variant("some_flag=true", "python", (("some_flag", "true"),))
    results = [VariantResult(base, reports(_run("branch4"))), VariantResult(flipped, reports(_run("alike4")))]
    report = build_report(ComparePlan(base, (flipped,)), results, Catalog("2.13.0", {}))
    text = render_compare(report, "table")
    expected = (
        "note: some_flag=true: rank divergence (ranks that compile a function differently): "
        "removes it from forward (distributed/diverge_worker.py:27)"
    )
    assert expected in text.splitlines()
    data = json.loads(render_compare(report, "json"))
    assert [len(r["rank_divergence"]) for r in data["runs"]] == [1, 0]
    back = build_report(ComparePlan(flipped, (base,)), results[::-1], Catalog("2.13.0", {}))
    assert "adds it to forward (distributed/diverge_worker.py:27)" in render_compare(back, "markdown")


VLLM = FIXTURES / "distributed" / "vllm_ascend_1368.log"


def test_a_worker_tag_before_the_rank_prefix_is_read_and_nothing_unnamed_is_called_alike():
    """Lines of a real 8-rank vLLM log (vllm-project/vllm-ascend#1368, TORCH_LOGS=+dynamic): each behind
    vLLM's `(VllmWorker rank=0 pid=293) ` tag, then torch's `[rank0]:`. They were all unrecognised (the
    file refused as holding no torch line); and with no frame named in it, the ranks cannot be compared:
    the report must not say they compiled alike."""
    run = parse_logs([str(VLLM)])
    assert run.parse.torch_lines == 6
    assert ranks_in(run) == {"": (0, 5, 7)}
    text = render(run_report(run), "table")
    assert "rank divergence: not known (ranks 0, 5, 7: the log does not name every frame compiled there" in text
    assert "alike" not in text
    (job,) = json.loads(render(run_report(run), "json"))["rank_divergence"]
    assert job["unnamed_ranks"] == [0, 5, 7] and job["functions"] == []


def test_frames_no_comparison_took_in_are_said():
    text = render(run_report(_run("shape2.unnamed")), "table").splitlines()
    assert "  not compared: frames the log does not name on rank 0" in text
