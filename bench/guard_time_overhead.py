"""What ``guarddiag run --measure-guards`` costs a run, and what it measures against torch's compile-time figure.

--measure-guards keeps torch's profiler on (CPU events only) in the script's process for the whole run: every
op of the script is recorded, and the cache lookups are read from the events at its end. This runs each
script with and without the option, alternating, and reports the medians of the wall time, CPU time and
peak RSS of the whole ``guarddiag run`` (start-up, compiles, the script, the report):

* ``bench/guard_heavy_model.py --blocks 48 --calls 200``: ~240 modules, 6 compiles of two frames (a graph break),
  then 200 calls that hit the cache; it prints its own time per hit call (the profiler's cost on a call);
* ``bench/overhead_script.py``: a small training loop (forward, backward, AdamW), many small ops a step.

From the last measured run of the guard-heavy model it also gives, per function, the measured median and
p90 of a call's lookup against torch's own one measurement at compile time (``guard_latency_us``).

    python bench/guard_time_overhead.py                  # 3 runs each, appends to bench/results.md
    python bench/guard_time_overhead.py --runs 5 --results /dev/null
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from run_bench import load_average, machine  # noqa: E402 - a bench script run by path

GUARDDIAG = Path(sys.executable).with_name("guarddiag")
SCRIPTS = {
    "guard_heavy_model.py --blocks 48 --calls 200": [str(BENCH / "guard_heavy_model.py"), "--", "--blocks", "48", "--calls", "200"],
    "overhead_script.py": [str(BENCH / "overhead_script.py")],
}
_HIT = re.compile(r"hit calls: ([\d.]+) us per call")


def once(args: list[str], measure: bool, work: Path) -> dict[str, object]:
    """One ``guarddiag run``: wall, CPU, peak RSS (bench/_measure.py), the script's own time per hit call, its record."""
    out, stats = work / "run.json", work / "measure.json"
    cmd = [str(GUARDDIAG), "run", *(["--measure-guards"] if measure else []), "--out", str(out), *args]
    # One op thread: on a shared 2-core machine, threads of an op waiting on each other vary a call's time tenfold.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with (work / "stdout.txt").open("w") as fh:
        subprocess.run([sys.executable, str(BENCH / "_measure.py"), str(stats), "900", *cmd], cwd=work, stdout=fh, check=True, env=env)
    result = json.loads(stats.read_text())
    if result["exit_code"] != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {result['exit_code']}")
    hit = _HIT.search((work / "stdout.txt").read_text())
    result["hit_us"] = float(hit.group(1)) if hit else None
    result["record"] = json.loads(out.read_text())
    return result


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--results", type=Path, default=BENCH / "results.md")
    args = parser.parse_args()
    facts = machine()
    rows, comparison = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for label, script in SCRIPTS.items():
            runs: dict[bool, list[dict]] = {False: [], True: []}
            for i in range(args.runs):
                for measure in (False, True) if i % 2 == 0 else (True, False):
                    work = Path(tmp) / f"{len(rows)}-{i}-{measure}"
                    work.mkdir()
                    runs[measure].append(once(script, measure, work))
                    print(label, "measured" if measure else "plain", f"{runs[measure][-1]['wall_s']:.2f} s", file=sys.stderr)
            for measure in (False, True):
                got = runs[measure]
                walls = [r["wall_s"] for r in got]
                hit = median([r["hit_us"] for r in got])
                rows.append([
                    f"`{label}`", "yes" if measure else "no",
                    f"{median(walls):.2f} s ({', '.join(format(w, '.2f') for w in walls)})",
                    f"{median([r['cpu_s'] for r in got]):.2f} s",
                    f"{median([r['maxrss_kib'] / 1024 for r in got]):.0f} MiB",
                    "" if hit is None else f"{hit:.0f} us",
                ])
            if label.startswith("guard_heavy"):
                comparison = _comparison(runs[True][-1]["record"])
    text = _render(facts, load_average(), args.runs, rows, comparison)
    print(text)
    with args.results.open("a", encoding="utf-8") as fh:
        fh.write("\n" + text)


def _comparison(record: dict) -> list[list[str]]:
    out = []
    for f in record["functions"]:
        latencies = [m["guard_latency_us"] for m in f.get("torch_metrics", []) if m.get("guard_latency_us") is not None]
        for g in f.get("guard_times", []):
            torch_us = latencies[-1] if latencies else None
            ratio = "" if torch_us in (None, 0) or g["median_us"] is None else f"{g['median_us'] / torch_us:.2f}x"
            out.append([
                f"`{f['name']}`", str(f["torch_metrics"][-1].get("guard_count") if f.get("torch_metrics") else ""),
                str(g["calls"]), str(g["timed"]), f"{g['median_us']:.0f} us", f"{g['p10_us']:.0f}-{g['p90_us']:.0f} us",
                f"{g['max_us']:.0f} us", "" if torch_us is None else f"{torch_us:.0f} us", ratio,
            ])
    return out


def _render(facts: list[tuple[str, str]], load_end: str, runs: int, rows: list[list[str]], comparison: list[list[str]]) -> str:
    lines = [f"## {facts[0][1]} UTC: run --measure-guards, its overhead and what it measures (issue 28, bench/guard_time_overhead.py)", ""]
    lines += ["| machine | |", "|---|---|", *(f"| {k} | {v} |" for k, v in facts)]
    lines += [f"| load average at end (1, 5, 15 min) | {load_end} |", ""]
    lines += [
        f"Medians of {runs} runs each of the whole `guarddiag run` (alternating with and without the option, OMP_NUM_THREADS=1); "
        "per hit call: the script's own time per call of its 200 cache hits.",
        "",
        "| script | --measure-guards | wall (runs) | CPU | peak RSS | per hit call |",
        "|---|---|---|---|---|---|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        "Measured at run time (the last measured run of the guard-heavy model) against torch's compile-time figure "
        "(`guard_latency_us` of the function's last compile: one check of the new entry's guards after a CPU cache flush):",
        "",
        "| function | guards (last entry) | calls | timed | median | p10-p90 | max | torch at compile time | median / torch |",
        "|---|---|---|---|---|---|---|---|---|",
        *("| " + " | ".join(r) + " |" for r in comparison),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
