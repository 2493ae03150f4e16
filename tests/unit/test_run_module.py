"""``-m MODULE`` on the command line (read as ``python -m`` reads it) and the record's module and ranks;
no torch run (tests/e2e/test_distributed.py runs real jobs)."""

from __future__ import annotations

import pytest

from guarddiag.cli import module_argv
from guarddiag.config import load_settings
from guarddiag.errors import InputError
from guarddiag.model import ParseStats, RankInfo, Run
from guarddiag.store import run_from_dict, run_to_dict


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


def test_a_record_keeps_its_module_and_ranks():
    ranks = (RankInfo("rank0", 0, 0, 1, 4, "node-b", "job7", 0), RankInfo("rank1", 1))
    run = Run(functions=(), parse=ParseStats(), source="run", module="torch.distributed.run", argv=("--nproc-per-node", "2"),
              ranks=ranks)
    data = run_to_dict(run)
    assert data["module"] == "torch.distributed.run" and data["script"] is None
    assert data["ranks"][0] == {"process": "rank0", "rank": 0, "local_rank": 0, "node_rank": 1, "world_size": 4,
                                "host": "node-b", "run_id": "job7", "restart": 0}
    assert run_from_dict(data) == run
    # Records written before these keys read as no module and no ranks.
    del data["module"], data["ranks"]
    assert (run_from_dict(data).module, run_from_dict(data).ranks) == (None, ())


def test_a_rank_of_the_wrong_type_is_refused():
    data = run_to_dict(Run(functions=(), parse=ParseStats(), ranks=(RankInfo("rank0", 0),)))
    data["ranks"][0]["rank"] = "zero"
    with pytest.raises(InputError, match=r"ranks\[0\]\.rank"):
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
