"""``-m MODULE`` on the command line (read as ``python -m`` reads it) and the record's module and ranks;
no torch run (tests/e2e/run/test_distributed.py runs real jobs)."""

from __future__ import annotations

import json

import pytest

from guarddiag.cli import module_argv
from guarddiag.config import load_settings
from guarddiag.errors import InputError
from guarddiag.ids import Process
from guarddiag.model import Job, JobProcess, ParseStats, Run
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        # Everything after MODULE is the module's, options too.
        (["run", "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py"],
         ["run", "--module=torch.distributed.run", "--module-arg=--nproc-per-node", "--module-arg=2", "--module-arg=t.py"]),
        # guarddiag's options stand before -m; a `--` after MODULE is the module's too.
        (["compare", "--flag", "x", "-mpytest", "--", "-x"],
         ["compare", "--flag", "x", "--module=pytest", "--module-arg=--", "--module-arg=-x"]),
        (["check", "--module=pkg.tool", "a=b"], ["check", "--module=pkg.tool", "--module-arg=a=b"]),
        (["--debug", "explain", "--module", "m"], ["--debug", "explain", "--module=m"]),
        # --debug after MODULE is the module's (main() looks for guarddiag's own only before it).
        (["run", "-m", "m", "--debug"], ["run", "--module=m", "--module-arg=--debug"]),
        # After `--` it is the script's; other commands take no -m; a bare -m is left for click to refuse.
        (["run", "s.py", "--", "-m", "x"], ["run", "s.py", "--", "-m", "x"]),
        (["parse", "-m", "x"], ["parse", "-m", "x"]),
        (["run", "-m"], ["run", "-m"]),
    ],
)
def test_module_argv_hands_everything_after_module_to_it(argv, expect):
    assert module_argv(["guarddiag", *argv]) == ["guarddiag", *expect]


def test_a_record_keeps_its_module_and_the_ranks_of_its_job():
    ranks = (
        JobProcess(Process.of_rank(0), 0, 0, "environment", ("torch.child-7.log",), None, 1, 4, "node-b", "job7", 0, 3),
        JobProcess(Process.of_rank(1), 1, None, "prefix", ()),
    )
    run = Run(functions=(), parse=ParseStats(), source="run", module="torch.distributed.run", argv=("--nproc-per-node", "2"),
              job=Job("run", ranks))
    data = json.loads(json.dumps(record_dict(run_report(run))))
    assert data["module"] == "torch.distributed.run" and data["script"] is None
    assert data["job"]["processes"][0] == {"process": "rank0", "rank": 0, "local_rank": 0, "named_by": "environment",
                                           "logs": ["torch.child-7.log"], "node": None, "node_rank": 1, "world_size": 4,
                                           "host": "node-b", "run_id": "job7", "restart": 0, "torch_compiles": 3}
    assert run_from_dict(data) == run
    # Records written before these keys read as no module and no job.
    del data["module"], data["job"]
    assert (run_from_dict(data).module, run_from_dict(data).job) == (None, None)


def test_a_record_that_kept_its_ranks_apart_reads_them_as_its_jobs_processes():
    """Records written before a run's ranks were its job's processes listed them under ``ranks``."""
    data = record_dict(run_report(Run(functions=(), parse=ParseStats(), source="run")))
    data["ranks"] = [{"process": "rank0", "rank": 0, "local_rank": 0, "node_rank": 1, "world_size": 4, "host": "node-b",
                      "run_id": "job7", "restart": 0}, {"process": "rank1", "rank": 1}]
    job = run_from_dict(data).job
    assert job is not None and job.read_as == "run"
    assert [(str(p.process), p.rank, p.node_rank, p.world_size, p.named_by) for p in job.processes] == [
        ("rank0", 0, 1, 4, "environment"), ("rank1", 1, None, None, "environment")
    ]


def test_a_rank_of_the_wrong_type_is_refused():
    run = Run(functions=(), parse=ParseStats(), job=Job("run", (JobProcess(Process.of_rank(0), 0, None, "environment", ()),)))
    data = json.loads(json.dumps(record_dict(run_report(run))))
    data["job"]["processes"][0]["rank"] = "zero"
    with pytest.raises(InputError, match=r"job\.processes\[0\]\.rank"):
        run_from_dict(data, "run.json")


def test_the_config_lists_a_module_with_its_arguments(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.guarddiag]\nscripts = ['a.py', {module = 'torch.distributed.run', args = ['--nproc-per-node', '2', 't.py']}]\n"
    )
    a, job = load_settings(tmp_path, {}, {}).scripts
    assert (a.path, a.module) == ("a.py", None)
    assert (job.path, job.module, job.args) == ("", "torch.distributed.run", ("--nproc-per-node", "2", "t.py"))


@pytest.mark.parametrize("entry", ["{module = 'm', path = 'a.py'}", "{module = ''}", "{args = ['x']}"])
def test_a_config_entry_needs_a_path_or_a_module(tmp_path, entry):
    (tmp_path / "pyproject.toml").write_text(f"[tool.guarddiag]\nscripts = [{entry}]\n")
    with pytest.raises(InputError, match="needs a 'path' string or a 'module' string"):
        load_settings(tmp_path, {}, {})


@pytest.mark.parametrize("label", ["rank", "worker1", "rank1:"])
def test_a_process_label_outside_the_grammar_is_refused_naming_its_place(label):
    run = Run(functions=(), parse=ParseStats(), job=Job("run", (JobProcess(Process.of_rank(0), 0, None, "environment", ()),)))
    data = json.loads(json.dumps(record_dict(run_report(run))))
    data["job"]["processes"][0]["process"] = label
    with pytest.raises(InputError, match=r"job\.processes\[0\]\.process: expected a process label"):
        run_from_dict(data, "run.json")
