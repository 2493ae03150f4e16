"""Where `guarddiag parse` of a TORCH_TRACE spends its time, in-process, against the text log of the same run.

trace_bench.py times whole processes; this splits the work inside one, in CPU seconds (steadier than
wall time on the shared cores), median of ``--repeats``:

- reading the lines alone (the floor of any line-by-line reader);
- the parser alone (TraceParser / LogParser, as ``guarddiag parse`` sets them up: counted guard kinds,
  locations kept), its events drained and dropped;
- the parser and the model builder (pipeline.LogReader, what ``parse`` runs before rendering);

then one cProfile'd parser-and-builder read of the trace, its costliest functions by own time. Prints a
Markdown section; ``--results FILE`` appends it.

    python bench/trace_profile.py                                   # the recorded run (bench/data/)
    python bench/trace_profile.py --trace /tmp/t/dedicated_log_torch_trace_10.log --log /tmp/t/scaled10.log --repeats 3
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench  # noqa: E402  (a sibling script, not a package)

from guarddiag.ids import MAIN_PROCESS  # noqa: E402
from guarddiag.logparse.parser import LogParser  # noqa: E402
from guarddiag.logparse.trace import TraceParser  # noqa: E402
from guarddiag.pipeline import COUNTED_GUARDS, LogReader, paused_gc  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _open(path: Path) -> io.TextIOWrapper:
    return path.open(encoding="utf-8", errors="replace")  # as pipeline._open reads a file


def read_lines(path: Path, trace: bool) -> None:
    with _open(path) as fh:
        for _ in fh:
            pass


def parser_alone(path: Path, trace: bool) -> None:
    parser = TraceParser(COUNTED_GUARDS, True, MAIN_PROCESS) if trace else LogParser(keep_guards=COUNTED_GUARDS)
    with _open(path) as fh, paused_gc():
        for _ in parser.parse(fh):
            pass


def with_builder(path: Path, trace: bool) -> None:
    with _open(path) as fh:
        (LogReader(trace=MAIN_PROCESS) if trace else LogReader()).read(fh).result()


STEPS: dict[str, Callable[[Path, bool], None]] = {
    "read the lines": read_lines,
    "parser alone": parser_alone,
    "parser + builder": with_builder,
}


def cpu_times(step: Callable[[Path, bool], None], trace: Path, log: Path, repeats: int) -> tuple[list[float], list[float]]:
    """CPU seconds of ``step`` on the trace and on the log, runs interleaved so drifting load hits both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for path, is_trace, out in ((trace, True, times[0]), (log, False, times[1])):
            started = time.process_time()
            step(path, is_trace)
            out.append(time.process_time() - started)
    return times


def top_functions(path: Path, top: int) -> list[str]:
    """Rows (function, calls, own s, cumulative s) of one profiled parser + builder read of the trace."""
    profile = cProfile.Profile()
    profile.runcall(with_builder, path, True)
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime")
    rows = []
    for func in stats.fcn_list[:top]:  # type: ignore[attr-defined]  # pstats keeps the sorted keys here
        calls, _, own, cumulative, _ = stats.stats[func]  # type: ignore[attr-defined]
        file, line, name = func
        where = f"{Path(file).relative_to(REPO)}:{line}" if file.startswith(str(REPO)) else "built-in" if file == "~" else Path(file).name
        rows.append(f"| `{name}` ({where}) | {calls:,} | {own:.3f} | {cumulative:.3f} |")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, help="a TORCH_TRACE file (default: the recorded one in bench/data/trace/)")
    parser.add_argument("--log", type=Path, help="the text log of the same run (default: bench/data/model.log)")
    parser.add_argument("--repeats", type=int, default=7, help="runs per median (default 7)")
    parser.add_argument("--top", type=int, default=15, help="functions listed from the profile (default 15)")
    parser.add_argument("--results", type=Path, help="append the section to this file (default: print only)")
    args = parser.parse_args(argv)
    try:
        trace, log = args.trace or run_bench.trace_file(), args.log or run_bench.model_log()
    except run_bench.BenchError as exc:
        print(f"trace_profile: {exc}", file=sys.stderr)
        return 2
    facts = run_bench.machine()
    lines = [f"## {facts[0][1]} UTC: where parse of a TORCH_TRACE spends its time (bench/trace_profile.py)", ""]
    lines += ["| machine | |", "|---|---|", *(f"| {k} | {v} |" for k, v in facts), ""]
    lines += [
        f"In-process CPU seconds, median of {args.repeats}: the trace {trace.name} ({trace.stat().st_size / 1e6:.1f} MB) and "
        f"the text log {log.name} ({log.stat().st_size / 1e6:.1f} MB) of the same run.",
        "",
        "| step | trace | text log | trace / text |",
        "|---|---|---|---|",
    ]
    for name, step in STEPS.items():
        runs_trace, runs_text = cpu_times(step, trace, log, args.repeats)
        t_trace, t_text = statistics.median(runs_trace), statistics.median(runs_text)
        lines.append(
            f"| {name} | {t_trace:.3f} s ({', '.join(f'{t:.3f}' for t in runs_trace)}) | "
            f"{t_text:.3f} s ({', '.join(f'{t:.3f}' for t in runs_text)}) | {t_trace / t_text:.2f}x |"
        )
    lines += ["", f"One cProfile'd parser + builder read of the trace, top {args.top} by own time:", ""]
    lines += ["| function | calls | own s | cumulative s |", "|---|---|---|---|", *top_functions(trace, args.top)]
    lines.append(f"\nload average at end: {run_bench.load_average()}")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.results is not None:
        run_bench.append_results(args.results, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
