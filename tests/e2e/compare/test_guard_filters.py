"""Guard filters applied by guarddiag (``compare --guard-filter``, ``run --guard-filter``) to a real model:
each helper of torch 2.13 drops the guards it promises, counted in the guard tree torch installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guarddiag.child import _bootstrap
from tests.conftest import ROOT, run_guarddiag

MODEL = ROOT / "tests" / "fixtures" / "guardfilters" / "small_model.py"
HELPERS = (
    "skip_guard_on_inbuilt_nn_modules_unsafe",
    "skip_guard_on_all_nn_modules_unsafe",
    "keep_tensor_guards_unsafe",
    "skip_guard_on_globals_unsafe",
    "keep_portable_guards_unsafe",
    "skip_all_guards_unsafe",
)

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The compare report's guard rows of ``forward``, by configuration: the baseline and every helper."""
    cwd = tmp_path_factory.mktemp("filters")
    args = [a for h in HELPERS for a in ("--guard-filter", h)]
    done = run_guarddiag("compare", str(MODEL), *args, "-j", "2", "--format", "json", cwd=cwd, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {g["label"].rpartition("=")[2]: g for g in report["guards"] if g["function"]["name"] == "forward"}
    assert set(rows) == {"baseline", *HELPERS}
    return rows


def test_each_helper_drops_the_guards_it_promises(measured: dict[str, dict]) -> None:
    base = measured["baseline"]["listed_last"]
    listed = {h: measured[h]["listed_last"] for h in HELPERS}
    assert base > 100  # three blocks of Linear + LayerNorm: their parameters dominate the tree
    # torch's own modules' parameters and attributes go; the user's modules stay: all modules drop more.
    assert listed["skip_guard_on_inbuilt_nn_modules_unsafe"] < base / 2
    assert listed["skip_guard_on_all_nn_modules_unsafe"] < listed["skip_guard_on_inbuilt_nn_modules_unsafe"]
    # Only non-parameter tensors keep their guard: the input x and the global SHIFT.
    assert listed["keep_tensor_guards_unsafe"] < listed["skip_guard_on_all_nn_modules_unsafe"]
    assert listed["skip_guard_on_globals_unsafe"] < base
    # Tensor guards stay, parameters' included (they are not globals): fewer than the baseline, more than tensors only.
    assert listed["keep_tensor_guards_unsafe"] < listed["keep_portable_guards_unsafe"] < base
    # An empty tree: a RootGuardManager alone.
    assert listed["skip_all_guards_unsafe"] == 0
    for h in HELPERS:
        assert measured[h]["listed_change"] == "fewer"


def test_torch_count_is_taken_before_the_filter(measured: dict[str, dict]) -> None:
    # torch's guard_count is len(output.guards), collected before the filter (convert_frame.py): the same for all.
    assert {measured[h]["torch_count_last"] for h in (*HELPERS, "baseline")} == {measured["baseline"]["torch_count_last"]}


def test_run_refuses_a_second_filter(tmp_path: Path) -> None:
    done = run_guarddiag("run", str(MODEL), "--guard-filter", "keep_tensor_guards_unsafe", "--", "--own-filter", cwd=tmp_path)
    assert done.returncode == 2
    assert "passes its own guard_filter_fn" in done.stderr
    assert "Traceback" not in done.stderr
    # Without --guard-filter the script's own filter runs as it is.
    assert run_guarddiag("run", str(MODEL), "--", "--own-filter", cwd=tmp_path).returncode == 0


def test_run_names_an_unknown_helper(tmp_path: Path) -> None:
    done = run_guarddiag("run", str(MODEL), "--guard-filter", "skip_guard_on_inbuilt_modules", cwd=tmp_path)
    assert done.returncode == 2
    assert "did you mean skip_guard_on_inbuilt_nn_modules_unsafe" in done.stderr


def test_child_names_the_first_torch_with_a_missing_helper() -> None:
    # A helper this torch lacks (a name no torch has stands in for an older torch's missing one).
    code = (
        "import importlib.util,sys;"
        f"s=importlib.util.spec_from_file_location('gf', {str(Path(_bootstrap.__file__).with_name('_guardfilter.py'))!r});"
        "m=importlib.util.module_from_spec(s);s.loader.exec_module(m)\n"
        "try:\n m.install('keep_future_guards_unsafe','2.99')\nexcept m.Missing as e:\n print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "has no torch.compiler.keep_future_guards_unsafe (first in torch 2.99)" in out


def test_flags_lists_what_removes_guards_for_the_target_torch(tmp_path: Path) -> None:
    done = run_guarddiag("flags", "--guard-removers", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["removers"]}
    # torch 2.13 has every row; each says what it gives up and how to measure it.
    assert all(r["in_this_torch"] for r in rows.values())
    assert rows["keep_tensor_guards_unsafe"]["measure"] == "--guard-filter keep_tensor_guards_unsafe"
