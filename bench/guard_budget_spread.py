"""How much torch's guard latency moves between runs of the same script, for ``check``'s guard budgets (issue 28).

``bench/guard_budget_spread.py [--runs N] [--append bench/results.md] "SCRIPT [ARGS...]"...`` (each script with its
arguments as one word)

Runs each script N times under ``guarddiag run -o`` (the installed guarddiag, eager backend as the scripts
choose) and reads, from each run record, per function: its guard count (the most leaves of any entry, and
torch's guard_count), every cache entry's compile-time latency, and what a call pays (low/high). Prints the
spread of each candidate figure across the runs: min, median, max and max/median, the ratio a margin
must cover for the same code not to fail the gate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The figures a latency budget could gate on, per function and run.
FIGURES = ("median entry", "max entry", "low", "high")


def one_run(script: list[str], out: Path, guarddiag: str) -> list[dict[str, object]]:
    """The per-function figures of one run of ``script``."""
    subprocess.run([guarddiag, "run", *script[:1], "-f", "json", "-o", str(out), "--", *script[1:]],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = json.loads(out.read_text())
    calls = {(c["function"]["name"], c["function"]["line"]): c for c in record.get("guard_cost", [])}
    rows = []
    for f in record["functions"]:
        entries = f.get("guard_entries") or []
        latencies = [e["latency_us"] for e in entries if e.get("latency_us") is not None]
        if not latencies:
            continue
        call = (calls.get((f["name"], f["line"])) or {}).get("per_call") or {}
        counts = [m.get("guard_count") for m in f.get("torch_metrics") or [] if m.get("guard_count")]
        rows.append(
            {
                "function": f"{f['name']}:{f['line']}",
                "leaves": max(e.get("leaves") or 0 for e in entries),
                "torch_guards": max(counts) if counts else None,
                "entries": latencies,
                "median entry": statistics.median(latencies),
                "max entry": max(latencies),
                "low": call.get("low_us"),
                "high": call.get("high_us"),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--append", type=Path, help="append the figures to this Markdown file")
    parser.add_argument("--busy", type=int, default=0, help="spin this many busy processes meanwhile (a loaded CI runner)")
    parser.add_argument("scripts", nargs="+", help="'SCRIPT [ARGS...]', each as one word")
    args = parser.parse_args()
    scripts = [shlex.split(s) for s in args.scripts]
    guarddiag = shutil.which("guarddiag") or sys.exit("guarddiag is not on PATH; activate the venv")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        text = measure(args.runs, scripts, guarddiag, args.busy)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    print(text)
    if args.append:
        with args.append.open("a", encoding="utf-8") as fh:
            fh.write(text)


def measure(runs_per_script: int, scripts: list[list[str]], guarddiag: str, busy: int) -> str:
    """The figures of ``runs_per_script`` runs of each script, as a Markdown section."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    contention = f", {busy} busy processes spinning meanwhile" if busy else ""
    lines = [
        f"\n## {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC: spread of torch's guard latency across runs "
        f"(issue 28, check budgets; bench/guard_budget_spread.py{' --busy ' + str(busy) if busy else ''})\n",
        f"nproc {os.cpu_count()}, python {platform.python_version()}, load average at start {load}, "
        f"{runs_per_script} runs of each script{contention}, eager backend; figures in microseconds (torch's compile-time "
        "'Guard eval latency', one cold check per entry).\n",
        "| script | function | guards (leaves / torch) | figure | min | median | max | max / median | per run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    entry_lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for script in [s for s in scripts if s]:
            runs = [one_run(script, Path(tmp) / f"r{i}.json", guarddiag) for i in range(runs_per_script)]
            for i, row in enumerate(runs[0]):
                same = [r[i] for r in runs if len(r) > i and r[i]["function"] == row["function"]]
                counts = sorted({(r["leaves"], r["torch_guards"]) for r in same})
                for figure in FIGURES:
                    values = [r[figure] for r in same if r[figure] is not None]
                    if not values:
                        continue
                    med = statistics.median(values)
                    lines.append(
                        f"| `{' '.join(script)}` | `{row['function']}` | {', '.join(f'{a} / {b}' for a, b in counts)} | {figure} | "
                        f"{min(values):.0f} | {med:.0f} | {max(values):.0f} | {max(values) / med:.2f} | "
                        f"{', '.join(f'{v:.0f}' for v in values)} |"
                    )
                entry_lines.append(
                    f"- `{' '.join(script)}` `{row['function']}` every entry, per run: "
                    + "; ".join(", ".join(f"{v:.0f}" for v in r["entries"]) for r in same)
                )
    lines += ["", *entry_lines, "", f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
