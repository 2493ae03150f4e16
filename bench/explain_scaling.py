"""guarddiag explain on big models (issue 18): time, memory and output length against the log's size.

For each recorded log of ``bench/explain_model.py`` (N = 16, 64, 256, 1024 blocks, made by
``bench/make_explain_logs.py``) runs the installed ``guarddiag parse LOG`` and ``guarddiag explain
LOG`` as subprocesses: wall seconds (median of ``--repeats``), MB/s, peak RSS, the default output's
line count (and ``--full``'s, one run), explain over parse on the largest log, and the growth
exponent of explain between the two largest logs, log(t2/t1) / log(bytes2/bytes1): 1 is linear,
2 quadratic. Appends a section to ``bench/results.md``; see ``bench/README.md``.

    python bench/explain_scaling.py                          # all sizes, median of 3
    python bench/explain_scaling.py --sizes 16 64 --repeats 1  # a try-out
    python bench/explain_scaling.py --json after.json --before before.json  # with a before/after table
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_explain_logs  # noqa: E402  (sibling scripts, not a package)
import run_bench  # noqa: E402

BENCH = Path(__file__).resolve().parent
MB = 1e6
TIMEOUT_S = 3600.0

# The targets of issue 18.
EXPLAIN_OVER_PARSE = 3.0  # explain on the largest log takes at most this many times parse
GROWTH_EXPONENT = 1.1  # log(t2/t1) / log(size2/size1) of explain between the two largest logs
SHORT_OUTPUT = 60  # lines of the default output, at every size


class BenchError(Exception):
    """A measure could not be taken; the message says why."""


@dataclass(frozen=True)
class Sample:
    wall_s: float
    rss_mib: float
    lines: int
    cpu_s: float = 0.0  # user + system time of the command (and the small launcher): steadier than wall under load


@dataclass
class SizeResult:
    blocks: int
    log: str
    bytes: int
    log_lines: int
    parse: list[Sample]
    explain: list[Sample]
    full: Sample | None
    floor: list[Sample] = field(default_factory=list)

    @property
    def parse_s(self) -> float:
        return statistics.median(s.wall_s for s in self.parse)

    @property
    def explain_s(self) -> float:
        return statistics.median(s.wall_s for s in self.explain)

    @property
    def parse_cpu(self) -> float:
        return statistics.median(s.cpu_s for s in self.parse)

    @property
    def explain_cpu(self) -> float:
        return statistics.median(s.cpu_s for s in self.explain)


def measure(cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = TIMEOUT_S) -> Sample:
    """Run ``cmd`` under ``_measure.py`` (wall time, its own peak RSS: see why there), counting its output lines."""
    with tempfile.TemporaryDirectory(prefix="bench-explain-") as tmp:
        record_path, out_path, err_path = Path(tmp) / "sample.json", Path(tmp) / "out", Path(tmp) / "err"
        launcher = [sys.executable, "-S", str(BENCH / "_measure.py"), str(record_path), str(timeout), *cmd]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with out_path.open("wb") as out, err_path.open("wb") as err:
            subprocess.run(launcher, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if not record_path.is_file():
            raise BenchError(f"the measuring process for `{' '.join(cmd)}` wrote no result")
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if record["exit_code"] != 0:
            tail = err_path.read_text(errors="replace").strip().splitlines()[-6:] or ["(nothing on stderr)"]
            why = "killed after the timeout" if record["exit_code"] == -signal.SIGKILL else f"exited {record['exit_code']}"
            raise BenchError(f"`{' '.join(cmd)}` {why} after {record['wall_s']:.1f} s:\n    " + "\n    ".join(tail))
        lines = run_bench.count_lines(out_path)
    return Sample(record["wall_s"], record["maxrss_kib"] / 1024, lines, cpu)


# What explain must do before any explaining: read the log keeping every guard of every listing, as
# explain does (``guarddiag parse`` keeps only the few kinds it counts, and skips building the rest).
FLOOR = """
import sys
from guarddiag.pipeline import LogReader, paused_gc
with open(sys.argv[1], encoding="utf-8", errors="replace", newline="") as fh, paused_gc():
    functions, _ = LogReader(guards=None, locations=False).read(fh).result()
print(len(functions))
"""


def bench_size(blocks: int, log: Path, command: Sequence[str], repeats: int, full: bool, floor: bool) -> SizeResult:
    size, log_lines = log.stat().st_size, run_bench.count_lines(log)  # also warms the page cache
    parse, explain = [], []
    for _ in range(repeats):  # interleaved, so that drifting load hits both alike
        parse.append(measure([*command, "parse", str(log)]))
        explain.append(measure([*command, "explain", str(log)]))
    full_sample = measure([*command, "explain", "--full", str(log)]) if full else None
    floors = [measure([sys.executable, "-c", FLOOR, str(log)]) for _ in range(repeats)] if floor else []
    result = SizeResult(blocks, run_bench._rel(log), size, log_lines, parse, explain, full_sample, floors)
    print(
        f"{blocks:>5} blocks, {size / MB:6.1f} MB: parse {result.parse_s:6.2f} s, explain {result.explain_s:6.2f} s, "
        f"{explain[0].lines} lines" + (f" ({full_sample.lines} --full, {full_sample.wall_s:.2f} s)" if full_sample else ""),
        flush=True,
    )
    return result


def exponent(small: SizeResult, big: SizeResult, what: str = "explain_s") -> float:
    """log(t2/t1) / log(size2/size1) between two logs: 1.0 linear, 2.0 quadratic."""
    return math.log(getattr(big, what) / getattr(small, what)) / math.log(big.bytes / small.bytes)


def _walls(samples: Sequence[Sample]) -> str:
    return ", ".join(f"{s.wall_s:.2f}" for s in samples)


def render(facts: list[tuple[str, str]], results: list[SizeResult], before: list[dict[str, object]] | None, how: str, load_end: str) -> str:
    lines = [f"## {facts[0][1]} UTC: explain scaling (issue 18){' — ' + how if how else ''}", ""]
    lines += ["| machine | |", "|---|---|", *(f"| {k} | {v} |" for k, v in facts)]
    lines += [f"| load average at end (1, 5, 15 min) | {load_end} |", ""]
    lines += [
        "| N blocks | log | parse s | parse MB/s | parse CPU s | parse peak RSS | explain s | explain MB/s | explain CPU s "
        "| explain peak RSS | explain / parse | explain lines (default / --full) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        full = f"{r.full.lines:,}" if r.full else "-"
        lines.append(
            f"| {r.blocks} | {r.bytes / MB:.1f} MB, {r.log_lines:,} lines "
            f"| {r.parse_s:.2f} ({_walls(r.parse)}) | {r.bytes / MB / r.parse_s:.1f} | {r.parse_cpu:.2f} "
            f"| {max(s.rss_mib for s in r.parse):.0f} MiB | {r.explain_s:.2f} ({_walls(r.explain)}) | {r.bytes / MB / r.explain_s:.1f} "
            f"| {r.explain_cpu:.2f} | {max(s.rss_mib for s in r.explain):.0f} MiB | {r.explain_s / r.parse_s:.2f}x "
            f"| {r.explain[0].lines} / {full} |"
        )
    lines += ["", "| measure | context | value | target | status |", "|---|---|---|---|---|"]
    lines += [f"| {m} | {c} | {v} | {t} | {s} |" for m, c, v, t, s in verdicts(results)]
    if before:
        lines += ["", *before_after(before, results)]
    return "\n".join(lines) + "\n"


def verdicts(results: list[SizeResult]) -> list[tuple[str, str, str, str, str]]:
    rows = []
    big = results[-1]
    ratio = big.explain_s / big.parse_s
    rows.append(
        (
            "explain / parse, largest log",
            f"{big.blocks} blocks, {big.bytes / MB:.1f} MB: explain {big.explain_s:.2f} s over parse {big.parse_s:.2f} s (medians); "
            f"in CPU time {big.explain_cpu:.2f} s over {big.parse_cpu:.2f} s = {big.explain_cpu / big.parse_cpu:.2f}x",
            f"**{ratio:.2f}x**",
            f"<= {EXPLAIN_OVER_PARSE:.0f}x",
            run_bench.verdict(ratio <= EXPLAIN_OVER_PARSE),
        )
    )
    if big.floor:
        floor = statistics.median(s.wall_s for s in big.floor)
        rows.append(
            (
                "explain's parse alone, largest log",
                f"`python -c` reading every guard listing as explain does (LogReader keeping all guards, no locations; no CLI, "
                "no explaining); "
                f"median of {len(big.floor)} ({_walls(big.floor)}); the floor of explain / parse",
                f"{floor:.2f} s = **{floor / big.parse_s:.2f}x** parse (CPU: "
                f"{statistics.median(s.cpu_s for s in big.floor) / big.parse_cpu:.2f}x)",
                "",
                "",
            )
        )
    if len(results) >= 2:
        small = results[-2]
        exp = exponent(small, big)
        rows.append(
            (
                "growth exponent of explain",
                f"log(t2/t1) / log(size2/size1) between {small.blocks} and {big.blocks} blocks "
                f"({small.explain_s:.2f} s -> {big.explain_s:.2f} s, {small.bytes / MB:.1f} -> {big.bytes / MB:.1f} MB); "
                f"in CPU time {exponent(small, big, 'explain_cpu'):.2f}; parse: {exponent(small, big, 'parse_s'):.2f}",
                f"**{exp:.2f}**",
                f"<= {GROWTH_EXPONENT}",
                run_bench.verdict(exp <= GROWTH_EXPONENT),
            )
        )
    longest = max(r.explain[0].lines for r in results)
    rows.append(
        (
            "default output stays short",
            "lines of `guarddiag explain LOG` per size: " + ", ".join(f"{r.blocks}: {r.explain[0].lines}" for r in results),
            f"**{longest}** lines at most",
            f"<= {SHORT_OUTPUT} at every size",
            run_bench.verdict(longest <= SHORT_OUTPUT),
        )
    )
    return rows


def before_after(before: list[dict[str, object]], results: list[SizeResult]) -> list[str]:
    """A table of explain before/after per size, from the ``--json`` of a run of the earlier code."""
    old = {int(b["blocks"]): b for b in before}  # type: ignore[call-overload]
    out = [
        "| N blocks | explain before s | explain after s | speedup | peak RSS before / after | lines before / after (default, --full) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        b = old.get(r.blocks)
        if b is None:
            continue
        b_explain = [Sample(**s) for s in b["explain"]]  # type: ignore[arg-type, union-attr]
        b_full = Sample(**b["full"]) if b.get("full") else None  # type: ignore[arg-type]
        b_s = statistics.median(s.wall_s for s in b_explain)
        lines_b = f"{b_explain[0].lines}, {b_full.lines if b_full else '-'}"
        lines_a = f"{r.explain[0].lines}, {r.full.lines if r.full else '-'}"
        out.append(
            f"| {r.blocks} | {b_s:.2f} ({_walls(b_explain)}) | {r.explain_s:.2f} | {b_s / r.explain_s:.1f}x "
            f"| {max(s.rss_mib for s in b_explain):.0f} / {max(s.rss_mib for s in r.explain):.0f} MiB | {lines_b} / {lines_a} |"
        )
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(make_explain_logs.SIZES), help="blocks (default 16 64 256 1024)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per median (default 3)")
    parser.add_argument("--no-full", dest="full", action="store_false", help="skip the one `explain --full` run per size")
    parser.add_argument("--record", action="store_true", help="record missing logs (bench/make_explain_logs.py) instead of stopping")
    parser.add_argument("--results", type=Path, default=BENCH / "results.md", help="default: bench/results.md; '-' prints only")
    parser.add_argument("--json", type=Path, help="also write the raw samples here (input of --before)")
    parser.add_argument("--before", type=Path, help="the --json of a run of the code before a change: adds a before/after table")
    parser.add_argument("--how", default="", help="a note for the section title, e.g. 'after the fix'")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logs = []
    for blocks in sorted(args.sizes):
        log = make_explain_logs.log_path(blocks)
        if not log.exists():
            if not args.record:
                print(f"explain_scaling: {log} is missing; run python bench/make_explain_logs.py (or pass --record)", file=sys.stderr)
                return 2
            make_explain_logs.record(blocks, sys.executable)
        logs.append((blocks, log))
    command = [run_bench.guarddiag()]
    facts = run_bench.machine()
    if os.environ.get("PYTHONPATH"):
        facts.append(("PYTHONPATH (guarddiag imported from)", os.environ["PYTHONPATH"]))
    started = time.monotonic()
    try:
        results = [bench_size(blocks, log, command, args.repeats, args.full, blocks == logs[-1][0]) for blocks, log in logs]
    except BenchError as err:
        print(f"explain_scaling: {err}", file=sys.stderr)
        return 1
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    section = render(facts, results, before, args.how, run_bench.load_average())
    print(f"\n{section}(measured in {time.monotonic() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n", encoding="utf-8")
    if str(args.results) != "-":
        run_bench.append_results(args.results, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
