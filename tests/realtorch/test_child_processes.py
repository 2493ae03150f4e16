"""Child processes outside the CLI: runs of a torchrun launcher that take turns at one rendezvous address
(child/runner.py, commands/spawn.py), and the ledger a process that imports torch writes through guarddiag's start-up hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guarddiag.child import _bootstrap
from guarddiag.child.runner import RunRequest
from guarddiag.commands.spawn import run_scripts
from guarddiag.ledger import compiles_in, read_ledger


@pytest.mark.torch
@pytest.mark.slow
def test_runs_that_meet_at_one_address_take_turns_and_others_do_not(tmp_path, capfd):
    """Real runs of a script named ``torchrun`` (it only notes when it started and ended): two that
    share the default address run one after the other; with --standalone, side by side."""
    script = tmp_path / "torchrun"
    script.write_text(
        "import json, sys, time\n"
        "start = time.time(); time.sleep(1.5)\n"
        "open(sys.argv[-1], 'w').write(json.dumps([start, time.time()]))\n"
    )

    def spans(*extra: str) -> list[list[float]]:
        outs = [tmp_path / f"span{i}{''.join(extra)}.json" for i in range(2)]
        requests = [RunRequest(script=script, args=(*extra, str(o)), python=sys.executable, workdir=tmp_path / "runs") for o in outs]
        runs = [report.run for report in run_scripts(requests, 2)]
        assert [r.status for r in runs] == ["ok", "ok"]
        return sorted(json.loads(o.read_text()) for o in outs)

    (a, b) = spans()
    assert a[1] <= b[0], "the second run started before the first ended"
    assert "meet at port 29500: they run one at a time" in capfd.readouterr().err
    (a, b) = spans("--standalone")
    assert b[0] < a[1], "runs that each pick a free port ran one at a time"


_SITE = Path(_bootstrap.__file__).parent / "_site"


def _child(code: str, folder: Path) -> None:
    """A Python process a run's script started (spawn, subprocess): guarddiag's _site on its path."""
    env = {**os.environ, "GUARDDIAG_CHILD_LOG_DIR": str(folder), "PYTHONPATH": str(_SITE)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@pytest.mark.torch
@pytest.mark.slow
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
