"""Runs of a torchrun job that meet at one fixed rendezvous address take turns (child/runner.py, commands/spawn.py):
in parallel (compare, check, baseline with --jobs) they would join each other's rendezvous or fail to
bind its port."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from guarddiag.child.runner import RunRequest, rendezvous_address
from guarddiag.commands.spawn import run_scripts

TORCHRUN = "torch.distributed.run"


@pytest.mark.parametrize(
    ("module", "args", "address"),
    [
        (TORCHRUN, ("--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29400", "train.py"), "localhost:29400"),
        (TORCHRUN, ("--rdzv_endpoint=node0:1234", "train.py"), "node0:1234"),
        (TORCHRUN, ("--master-port", "29777", "train.py"), "port 29777"),
        (TORCHRUN, ("--nproc-per-node", "2", "train.py"), "port 29500"),  # torchrun's default static rendezvous
        (TORCHRUN, ("--standalone", "--nproc-per-node", "2", "train.py"), None),  # a free port of its own
        ("torch.distributed.launch", ("--nproc_per_node", "2", "train.py"), "port 29500"),
        ("pytest", ("--master-port", "1"), None),  # not a launcher
        (None, (), None),
    ],
)
def test_the_address_a_torchrun_launch_meets_at(module, args, address):
    assert rendezvous_address(RunRequest(script=None if module else Path("train.py"), args=args, module=module)) == address


def test_a_script_named_torchrun_is_the_launcher():
    assert rendezvous_address(RunRequest(script=Path("/venv/bin/torchrun"), args=("train.py",))) == "port 29500"


@pytest.mark.torch
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
        runs = run_scripts(requests, 2)
        assert [r.status for r in runs] == ["ok", "ok"]
        return sorted(json.loads(o.read_text()) for o in outs)

    (a, b) = spans()
    assert a[1] <= b[0], "the second run started before the first ended"
    assert "meet at port 29500: they run one at a time" in capfd.readouterr().err
    (a, b) = spans("--standalone")
    assert b[0] < a[1], "runs that each pick a free port ran one at a time"
