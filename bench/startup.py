"""Start-up cost of the command line (issue 12): what `guarddiag version` and `guarddiag parse` pay before work.

Runs the installed ``guarddiag version`` and ``guarddiag parse LOG`` (LOG: a small recorded log,
tests/fixtures/logs/torch-2.13.0/reset_and_failures.log, 12 KB) ``--repeats`` times each, and takes the
median of their wall time and of their CPU time (user + system, steadier than wall on a busy
machine). Then runs each under ``python -X importtime`` as often and lists the median cumulative
import time of the modules that cost most (typer, click, yaml, guarddiag.model, ...), and the total
of everything imported before the command's own work. Appends a section to ``bench/results.md``
(``--results``) with the machine and its load average at start and end.

    python bench/startup.py                  # median of 21, appended to bench/results.md
    python bench/startup.py --repeats 5 --label "after: lazy yaml" --no-append   # a try-out, printed only
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench  # noqa: E402  (a sibling script, not a package: machine facts and the results file)

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TINY_LOG = REPO / "tests" / "fixtures" / "logs" / "torch-2.13.0" / "reset_and_failures.log"
COMMANDS = {"version": ["version"], "parse": ["parse", str(TINY_LOG)]}
# Modules whose import time is listed, besides the most expensive ones.
WATCHED = ("typer", "click", "rich", "yaml", "tabulate", "guarddiag.cli", "guarddiag.model", "guarddiag.render", "guarddiag.pipeline")
_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")


@dataclass(frozen=True)
class Timing:
    wall_s: float
    cpu_s: float


def timed(cmd: Sequence[str]) -> Timing:
    """Wall and CPU (user + system) seconds of one run of ``cmd``, its output discarded."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise run_bench.BenchError(f"`{' '.join(cmd)}` exited {proc.returncode}; run it by hand to see why")
    return Timing(wall, usage.ru_utime + usage.ru_stime)


def import_times(args: Sequence[str]) -> dict[str, float]:
    """Module -> cumulative import seconds in one ``python -X importtime -m guarddiag ARGS``; ``(all)``: the top-level sum."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "guarddiag", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise run_bench.BenchError(f"`python -m guarddiag {' '.join(args)}` exited {proc.returncode}: {proc.stderr[-500:]}")
    times: dict[str, float] = {"(all)": 0.0}
    for line in proc.stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if not m:
            continue
        cumulative, indent, module = int(m.group(2)) / 1e6, len(m.group(3)), m.group(4)
        times[module] = max(times.get(module, 0.0), cumulative)
        if indent == 0:  # a top-level import: its cumulative time includes everything below it
            times["(all)"] += cumulative
    return times


def median_imports(args: Sequence[str], repeats: int) -> dict[str, float]:
    runs = [import_times(args) for _ in range(repeats)]
    seen: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for module, seconds in run.items():
            seen[module].append(seconds)
    return {module: statistics.median(values + [0.0] * (repeats - len(values))) for module, values in seen.items()}


def measure(repeats: int) -> list[tuple[str, str, str]]:
    """Rows (measure, context, value) for every command."""
    exe = run_bench.guarddiag()
    rows = []
    for name, args in COMMANDS.items():
        timings = [timed([exe, *args]) for _ in range(repeats)]
        wall = statistics.median(t.wall_s for t in timings)
        cpu = statistics.median(t.cpu_s for t in timings)
        shown = " ".join(a if a != str(TINY_LOG) else str(TINY_LOG.relative_to(REPO)) for a in args)
        rows.append((f"`guarddiag {name}` wall", f"`guarddiag {shown}`, median of {repeats}", f"{wall * 1000:.0f} ms"))
        rows.append((f"`guarddiag {name}` CPU", f"user + system of the same runs, median of {repeats}", f"{cpu * 1000:.0f} ms"))
        imports = median_imports(args, repeats)
        top = sorted((m for m in imports if m != "(all)" and "." not in m), key=imports.get, reverse=True)[:6]
        listed = list(dict.fromkeys([*top, *(m for m in WATCHED if m in imports)]))
        detail = ", ".join(f"{m} {imports[m] * 1000:.1f}" for m in listed)
        rows.append(
            (f"`guarddiag {name}` imports", f"`python -X importtime -m guarddiag {shown}`, median of {repeats}, ms cumulative: {detail}",
             f"{imports['(all)'] * 1000:.0f} ms")
        )
    return rows


def render(label: str, facts: list[tuple[str, str]], rows: list[tuple[str, str, str]], load_end: str) -> str:
    lines = [f"## {facts[0][1]} UTC: start-up, {label} (issue 12, bench/startup.py)", "", "| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in facts]
    lines += [f"| load average at end (1, 5, 15 min) | {load_end} |", "", "| measure | context | value |", "|---|---|---|"]
    lines += [f"| {m} | {c} | {v} |" for m, c, v in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="runs per median (default 21)")
    parser.add_argument("--label", default="as committed", help="what was measured, for the section title")
    parser.add_argument("--results", type=Path, default=BENCH / "results.md", help="the file to append to")
    parser.add_argument("--no-append", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    facts = run_bench.machine()
    try:
        rows = measure(max(1, args.repeats))
    except run_bench.BenchError as exc:
        print(f"startup: {exc}", file=sys.stderr)
        return 1
    section = render(args.label, facts, rows, run_bench.load_average())
    print(section)
    if not args.no_append:
        run_bench.append_results(args.results, section)
        print(f"appended to {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
