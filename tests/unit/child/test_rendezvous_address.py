"""The address a torchrun launch meets at (child/runner.rendezvous_address): runs that share one take turns,
in parallel (compare, check, baseline with --jobs) they would join each other's rendezvous or fail to bind its
port (tests/realtorch/test_child_processes.py runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guarddiag.child.runner import RunRequest, rendezvous_address

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
