"""Review of the job-processes change (Run.job for a run's ranks, JobRanks, compile_gaps, rendezvous turns):
inputs its own tests did not try."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guarddiag.child import _bootstrap
from guarddiag.child.runner import RunRequest, rendezvous_address
from guarddiag.divergence import job_ranks, rank_divergence
from guarddiag.ledger import compiles_in, read_ledger
from guarddiag.model import FunctionSummary, Job, JobProcess, ParseStats, Run
from guarddiag.render import render
from guarddiag.store import run_from_dict, run_to_dict


def _compiled(process: str, name: str, line: int) -> FunctionSummary:
    return FunctionSummary(name, "/job/train.py", line, (f"{process}:{line}",), 1, ())


def _rank(rank: int, torch_compiles: int | None) -> JobProcess:
    log = f"/runs/x/torch.child-{rank}.log"
    return JobProcess(f"rank{rank}", rank, rank, "environment", (log,), world_size=2, torch_compiles=torch_compiles)


def _partly_lost() -> Run:
    """Both ranks compiled f and g (torch counted 2 in each); rank 1's log lost g's lines (the script
    turned logging off between them): its log shows f alone."""
    functions = (_compiled("rank0", "f", 7), _compiled("rank0", "g", 11), _compiled("rank1", "f", 7))
    return Run(functions, ParseStats(), source="run", job=Job("run", (_rank(0, 2), _rank(1, 2))), log_path="/runs/x/torch.log")


def test_a_rank_whose_log_lost_some_lines_is_not_said_to_have_never_compiled_what_it_does_not_show():
    """Seen on a real torchrun job (rank 1 calls logging.disable between two compiles): the report said
    'g: rank 1 never compiled it', which torch's own count in rank 1 (2, its log shows 1) contradicts."""
    run = _partly_lost()
    assert rank_divergence(run) == ()
    ranks = job_ranks(run)[""]
    assert (ranks.compared, ranks.uncounted, ranks.lost) == ((0,), (1,), (1,))
    text = render(run, "table")
    assert "never compiled" not in text and "compiled differently" not in text
    assert "not compared: rank 1 (its log shows fewer compiles than torch counted there" in text
    assert "torch's own count is not known" not in text  # it is known: 2
    (job,) = json.loads(render(run, "json"))["rank_divergence"]
    assert (job["ranks"], job["uncounted_ranks"], job["lost_ranks"]) == ([0], [1], [1])


def test_a_rank_whose_log_lost_every_line_is_said_to_have_lost_lines_not_to_have_no_count():
    """The --mute-rank case: torch counted 2 compiles in rank 1, its log shows none. The count is known;
    the words must not say it is not."""
    functions = (_compiled("rank0", "f", 7), _compiled("rank0", "g", 11))
    run = Run(functions, ParseStats(), source="run", job=Job("run", (_rank(0, 2), _rank(1, 2))))
    text = render(run, "table")
    assert "torch's own count is not known" not in text
    assert "not compared: rank 1 (its log shows fewer compiles than torch counted there" in text


def test_a_lost_rank_recompiling_elsewhere_is_named_as_lost_in_the_function_sentence():
    """Rank 0 recompiled f, rank 2 compiled f once, rank 1 lost lines: f diverges between 0 and 2, and
    the sentence says rank 1 is not known because its log lost lines."""
    f0 = FunctionSummary("f", "/job/train.py", 7, ("rank0:7",), 3, ())
    functions = (f0, _compiled("rank2", "f", 7), _compiled("rank1", "f", 7))
    processes = (_rank(0, 3), _rank(1, 4), _rank(2, 1))
    run = Run(functions, ParseStats(), source="run", job=Job("run", processes))
    (d,) = rank_divergence(run)
    assert (d.uncounted, d.lost) == ((1,), (1,))
    text = render(run, "table")
    assert "rank 1: not known (its log shows fewer compiles than torch counted there" in text


def test_a_record_with_a_lost_rank_round_trips_and_renders_in_every_format():
    run = _partly_lost()
    again = run_from_dict(json.loads(json.dumps(run_to_dict(run))))
    assert again.job == run.job
    for fmt in ("table", "json", "yaml", "markdown"):
        assert render(again, fmt)


TORCHRUN = "torch.distributed.run"


@pytest.mark.parametrize(
    ("args", "address"),
    [
        # The training script's own arguments are not torchrun's: these runs meet at torchrun's default.
        (("--nproc-per-node", "2", "train.py", "--standalone"), "port 29500"),
        (("--nproc-per-node", "2", "train.py", "--master-port", "1234"), "port 29500"),
        (("--nproc-per-node", "2", "train.py", "--rdzv-endpoint", "x:1"), "port 29500"),
        (("-m", "pkg.train", "--standalone"), "port 29500"),
        # torchrun's own, whatever their order: an endpoint is where a static rendezvous meets too.
        (("--master-port", "1", "--rdzv-endpoint", "node0:29600", "train.py"), "node0:29600"),
        (("--master_port=1", "--nproc_per_node=2", "train.py"), "port 1"),
        (("--nproc-per-node", "2", "--standalone", "train.py", "--master-port", "1"), None),
        (("--no-python", "--nproc-per-node", "2", "echo", "--standalone"), "port 29500"),
    ],
)
def test_the_address_is_read_from_torchruns_own_options_not_the_scripts(args, address):
    assert rendezvous_address(RunRequest(script=None, args=args, module=TORCHRUN)) == address


def test_c10d_without_an_endpoint_meets_at_its_default_whatever_the_master_port():
    """torchrun ignores --master-port for a c10d rendezvous (localhost:29400 when no endpoint is given):
    two such runs with different master ports meet at one address all the same."""
    a, b = (RunRequest(script=None, args=("--rdzv-backend", "c10d", "--master-port", p, "t.py"), module=TORCHRUN) for p in ("1", "2"))
    assert rendezvous_address(a) == rendezvous_address(b) is not None


def test_torchruns_pet_variables_count_as_its_options():
    standalone = RunRequest(script=None, args=("train.py",), module=TORCHRUN, env=(("PET_STANDALONE", "1"),))
    assert rendezvous_address(standalone) is None
    port = RunRequest(script=None, args=("train.py",), module=TORCHRUN, env=(("PET_MASTER_PORT", "29611"),))
    assert rendezvous_address(port) == "port 29611"


_SITE = Path(_bootstrap.__file__).parent / "_site"


def _child(code: str, folder: Path) -> None:
    """A Python process a run's script started (spawn, subprocess): guarddiag's _site on its path."""
    env = {**os.environ, "GUARDDIAG_CHILD_LOG_DIR": str(folder), "PYTHONPATH": str(_SITE)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@pytest.mark.torch
def test_a_process_that_imported_torch_and_never_loaded_dynamo_has_a_ledger_of_0_compiles(tmp_path):
    """A rank that never calls torch.compile (only rank 0 evaluates a compiled model) never loads
    torch._dynamo.utils, so its records were never hooked and no ledger was written: a real torchrun
    job said 'torch's own count is not known ... `guarddiag run` counts each rank' of it, under guarddiag
    run. Nothing can compile without that module: at exit its ledger says 0. A process without torch
    gets none."""
    _child("import torch, torch.distributed", tmp_path)
    (ledger,) = tmp_path.glob("*.compiles.jsonl")
    assert compiles_in(read_ledger(ledger)) == 0
    ledger.unlink()
    _child("import json", tmp_path)
    assert not list(tmp_path.glob("*.compiles.jsonl"))
    _child("import torch; torch.compile(lambda x: x + 1, backend='eager')(torch.ones(2))", tmp_path)
    (ledger,) = tmp_path.glob("*.compiles.jsonl")
    assert compiles_in(read_ledger(ledger)) == 1


def test_a_lambda_in_the_markdown_divergence_section_is_not_taken_for_an_html_tag():
    from guarddiag.render.escape import markdown_text

    line = "<lambda> (x.py:3): rank 1 recompiled it (value of `a<b`)"
    assert markdown_text(line) == "&lt;lambda> (x.py:3): rank 1 recompiled it (value of `a<b`)"
