"""Guard cost on real models (issue 28): the 1,024-block bench model, and transformers GPT-2 and Llama from small
configs under generate(): the report names where the guards are and what they cost, its figures are torch's own
for the same run, and the guard filter it suggests, applied by compare, drops guards and what calls pay.
``make test-guard-models`` (a few minutes; transformers installed by the target), not part of make test."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_guarddiag

pytestmark = [pytest.mark.torch, pytest.mark.guard_models]
HF = ROOT / "bench" / "hf_guard_models.py"
BLOCKS = ROOT / "bench" / "explain_model.py"
FILTER = "skip_guard_on_inbuilt_nn_modules_unsafe"


def _needs_transformers() -> None:
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed here: `make test-guard-models` installs the pinned version")


def _run(tmp_path: Path, script: Path, *args: str) -> tuple[dict, str]:
    out = tmp_path / "run.json"
    proc = run_guarddiag("run", str(script), "--out", str(out), "--", *args, cwd=tmp_path, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def _torchs_own(record: dict) -> None:
    """Every listed entry's latency is torch's own figure for that compile, and each entry of a function is in its cost."""
    for f in record["functions"]:
        figures = {m["compile_id"]: m for m in f.get("torch_metrics", []) if m["guard_latency_us"] is not None}
        for e in f.get("guard_entries", []):
            torch = figures[e["compile_id"].partition("_")[0]]
            assert abs(e["latency_us"] - torch["guard_latency_us"]) < 1, (e, torch)


@pytest.mark.parametrize(("model", "container", "layers"), [("gpt2", "`self.transformer.h`", 4), ("llama", ".model.layers`", 4)])
def test_a_transformer_under_generate_names_its_layers_and_the_filter_drops_their_guards(tmp_path, model, container, layers):
    _needs_transformers()
    record, stdout = _run(tmp_path, HF, "--model", model, "--layers", str(layers))
    _torchs_own(record)
    (cost,) = record["guard_cost"]
    assert cost["entries"] >= 2 and cost["last_entry"]["leaves"] > 500
    assert f"{container} ({layers} items, about" in stdout
    assert f"--flag compile.guard_filter_fn={FILTER}" in stdout  # the hint, and the compare that verifies it
    done = run_guarddiag(
        "compare", "--measure-guards", "--guard-filter", FILTER, str(HF), "-j", "2", "-f", "json", "--", "--model", model,
        "--layers", str(layers), cwd=tmp_path, timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {g["label"]: g for g in json.loads(done.stdout)["guards"]}
    base, filtered = rows["baseline"], rows[f"compile.guard_filter_fn={FILTER}"]
    assert filtered["listed_last"] < base["listed_last"] * 0.8, (base, filtered)
    assert base["measured_calls"] and filtered["measured_calls"]


def test_the_1024_block_model_has_its_blocks_named_with_their_guards(tmp_path):
    record, stdout = _run(tmp_path, BLOCKS, "--blocks", "1024")
    _torchs_own(record)
    (f,) = [f for f in record["functions"] if f["name"] == "forward"]
    top = f["guard_entries"][-1]["origins"][0]
    assert (top["source"], top["members"]) == ("L['self']._modules['blocks']", 1024) and top["guards"] > 40_000
    assert "`self.blocks` (1,024 items, about 40 guards each)" in stdout
