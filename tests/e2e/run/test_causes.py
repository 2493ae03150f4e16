"""The cause that matters and explain's words about sizes (#25 sections 3 and 4), against real torch runs:
torch's own count is the truth.

- The decisive cause of a train/eval loop whose loss smoothing changes every epoch: guarddiag puts 6 of its
  7 recompiles on the smoothing and one on grad mode; torch with the smoothing held recompiles once.
- explain's claims about another size of a dynamic input: each size tried for real reuses an entry exactly
  where explain says "no recompile" (the conditions it names hold), and recompiles where it says so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_guarddiag, torch_truth

pytestmark = pytest.mark.torch

SMOOTHING = FIXTURES / "causes" / "label_smoothing.py"
PROBE = FIXTURES / "explain" / "probe_sizes.py"


def _torch_compiles(script: Path, tmp_path: Path, env: dict[str, str]) -> int:
    """torch's own count of the script's one function's compiles."""
    (compiles,) = torch_truth(script, tmp_path, env=env).values()
    return compiles


@pytest.mark.slow
def test_the_smoothing_decides_six_recompiles_as_torch_counts_them(tmp_path: Path):
    proc = run_guarddiag("run", str(SMOOTHING), "--out", str(tmp_path / "run.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (f,) = json.loads((tmp_path / "run.json").read_text())["functions"]
    decisive = [e["causes"][0] for e in f["recompile_events"]]
    smoothing = [c for c in decisive if c["source"].endswith("keywords['label_smoothing']")]
    held = _torch_compiles(SMOOTHING, tmp_path, {"GUARDDIAG_FIXTURE_HOLD": "label_smoothing"})
    # With the smoothing held, what is left is what the other causes cost.
    assert held - 1 == len(decisive) - len(smoothing) == 1
    assert [(c["kind"], c["checked"]) for c in decisive if c not in smoothing] == [("GLOBAL_STATE", "grad mode")]
    (hit,) = f["limit_hits"]
    assert "grad_mode" in hit["last_reason"] and hit["cause"]["source"].endswith("keywords['label_smoothing']")
    assert "6x value: value of `loss_fn.keywords['label_smoothing']`" in proc.stdout
    assert "on value of `loss_fn.keywords['label_smoothing']`" in proc.stdout


_TERM = re.compile(r"\b([A-Za-z_]\w*)\.size\((\d+)\)")
_SAFE = re.compile(r"^[\d\s()+\-*/%<>=!]*$")


def _holds(condition: str, sizes: dict[str, tuple[int, ...]]) -> bool:
    """A condition as explain writes it (``x.size(1) % 8 == 0``) evaluated on an input's sizes."""
    text = _TERM.sub(lambda m: str(sizes[m[1]][int(m[2])]), condition)
    assert _SAFE.match(text), text
    return bool(eval(text, {"__builtins__": {}}))  # noqa: S307 - digits and operators only (checked above)


def _claims_reuse(entry: dict, sizes: dict[str, tuple[int, ...]]) -> bool:
    """Whether explain says a call with these sizes reuses this entry, from its sentences only."""
    for row in entry["objects"]:
        name = row["name"].split("`")[1] if "`" in row["name"] else row["name"]
        if name not in sizes:
            continue
        for sentence in row["recompiles"]:
            static = re.match(rf"another size of `{name}` at dim ([\d, ]+) recompiles: ", sentence)
            shown = re.search(r"\[([^\]]*)\]", row["detail"])
            if static and shown:
                listed = [s.strip() for s in shown[1].split(",")]
                if any(listed[int(d)] != str(sizes[name][int(d)]) for d in static[1].split(", ")):
                    return False
        for sentence in row["no_recompile"]:
            dim = re.match(rf"another size of `{name}` at dim (\d+)", sentence)
            if dim is None:
                continue
            if "that keeps " in sentence:
                conditions = sentence.partition("that keeps ")[2].partition(": no recompile")[0].split("`")[1::2]
                if not all(_holds(c, sizes) for c in conditions):
                    return False
            elif "size >= 2" in sentence and sizes[name][int(dim[1])] < 2:
                return False
    return True


def _probe(tmp_path: Path, env: dict[str, str]) -> tuple[dict, dict]:
    proc = run_guarddiag("explain", str(PROBE), "--format", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    explained = {f["name"]: f for f in json.loads(proc.stdout)["functions"]}
    args = ["--apply", "--backend", env.get("GUARDDIAG_FIXTURE_BACKEND", "eager")]
    args += ["--only", *env["GUARDDIAG_FIXTURE_ONLY"].split()] if "GUARDDIAG_FIXTURE_ONLY" in env else []
    ran = subprocess.run([sys.executable, str(PROBE), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    return explained, json.loads(ran.stdout.strip().splitlines()[-1])


def _check(explained: dict, measured: dict) -> int:
    compared = 0
    for name, tried in measured.items():
        f = explained[name]
        entry = f["entries"][-1]  # the dynamic entry: the second warm-up call's
        params = [p for p in ("x", "bias", "heads") if any(f"`{p}`" in o["name"] for o in entry["objects"])]
        for candidate, graphs in tried.items():
            sizes = dict(zip(params, (tuple(s) for s in json.loads(candidate)), strict=True))
            said = _claims_reuse(entry, sizes)
            assert said == (graphs == 0), (name, candidate, graphs, [o for o in entry["objects"] if "dynamic" in o["how"]])
            compared += 1
    return compared


def test_explain_says_no_recompile_only_for_sizes_that_keep_every_guard(tmp_path: Path):
    explained, measured = _probe(tmp_path, {})
    assert _check(explained, measured) == 25
    # The claims that matter here: a size that keeps the branch reuses, one that breaks it recompiles.
    pad = [o for o in explained["pad_to_multiple"]["entries"][-1]["objects"] if "dynamic" in o["how"]][0]
    assert any("that keeps `x.size(1) % 8 == 0`" in s for s in pad["no_recompile"]), pad
    assert measured["pad_to_multiple"]["[[4, 20]]"] == 1 and measured["pad_to_multiple"]["[[4, 32]]"] == 0


@pytest.mark.slow
def test_inductors_own_size_bound_is_said_and_holds(tmp_path: Path):
    """Inductor bounds a reduction's size itself (2 <= x.size(0) <= 4096): explain names the bound, and 5000 rows
    recompile on inductor (on eager they reuse the entry: the other test)."""
    env = {"GUARDDIAG_FIXTURE_BACKEND": "inductor", "GUARDDIAG_FIXTURE_ONLY": "normalize"}
    explained, measured = _probe(tmp_path, env)
    assert _check(explained, measured) == 3
    assert measured["normalize"]["[[5000, 3]]"] == 1
