"""Record a real guard-heavy torch log and the TORCH_TRACE of the same run.

Runs ``bench/guard_heavy_model.py`` (~300 submodules, 12 compiles over 2 frames) in a child
interpreter with ``TORCH_LOGS=dynamo,guards,recompiles,graph_breaks`` (its stderr becomes
``bench/data/model.log``) and ``TORCH_TRACE=bench/data/trace`` (torch's structured trace of the
very same run, which tlparse reads). Takes about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TORCH_LOGS = "dynamo,guards,recompiles,graph_breaks"


def record_log(model: str, blocks: int, python: str, log_path: Path, env: dict[str, str] | None = None) -> float:
    """Run ``bench/MODEL --blocks N`` in a child interpreter with guarddiag's ``TORCH_LOGS`` (and ``env``),
    its stderr written to ``log_path`` only once it exited cleanly; the seconds it took. SystemExit with
    the log's last lines when the model fails."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    child_env = dict(os.environ, TORCH_LOGS=TORCH_LOGS, **(env or {}))
    if env is None or "TORCH_TRACE" not in env:
        child_env.pop("TORCH_TRACE", None)
    tmp = log_path.with_suffix(".log.tmp")
    started = time.monotonic()
    with tmp.open("wb") as stderr:
        proc = subprocess.run(
            [python, str(BENCH / model), "--blocks", str(blocks)], env=child_env, stderr=stderr, stdout=subprocess.DEVNULL, check=False
        )
    if proc.returncode != 0:
        tail = tmp.read_text(errors="replace").splitlines()[-5:]
        raise SystemExit(f"{model} --blocks {blocks} exited {proc.returncode}; last log lines:\n" + "\n".join(tail))
    os.replace(tmp, log_path)
    return time.monotonic() - started


def describe(path: Path, took: float) -> str:
    """``PATH: 61.0 MB, 184,000 lines (95 s)``."""
    lines = sum(1 for _ in path.open("rb"))
    return f"{path}: {path.stat().st_size / 1e6:.1f} MB, {lines:,} lines ({took:.0f} s)"


def record(out_dir: Path, blocks: int, python: str) -> tuple[Path, Path]:
    """Run the model once; return (model.log, trace dir). Raises SystemExit with a message on failure."""
    log_path, trace_dir = out_dir / "model.log", out_dir / "trace"
    shutil.rmtree(trace_dir, ignore_errors=True)
    took = record_log("guard_heavy_model.py", blocks, python, log_path, {"TORCH_TRACE": str(trace_dir)})
    traces = sorted(trace_dir.glob("*.log"))
    if not traces:
        raise SystemExit(f"make_model_log: torch wrote no trace into {trace_dir}; is TORCH_TRACE supported by this torch?")
    print(describe(log_path, took))
    for trace in traces:
        print(f"{trace}: {trace.stat().st_size / 1e6:.1f} MB (TORCH_TRACE of the same run)")
    return log_path, trace_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=BENCH / "data", help="default: bench/data")
    parser.add_argument("--blocks", type=int, default=60, help="model blocks, 5 modules each (default 60)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch (default: this one)")
    args = parser.parse_args()
    record(args.out_dir, args.blocks, args.python)


if __name__ == "__main__":
    main()
