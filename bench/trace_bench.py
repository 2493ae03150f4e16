"""guarddiag on a TORCH_TRACE against tlparse on the same file, and against guarddiag on the text log of the same run.

Issue 27 §3 and issue 31: whole processes, timed the way run_bench.py times them (``bench/_measure.py``
forks each command and reads its wall time, CPU time and peak RSS), at two sizes:

- the recorded run: ``bench/data/model.log`` and the TORCH_TRACE torch wrote beside it
  (``bench/data/trace/``; ``python bench/make_model_log.py`` records both, about a minute);
- about 1 GiB: the trace scaled by ``make_scaled_trace.py`` and the text log scaled by
  ``make_scaled_log.py`` with **the same number of copies**, so both stay one run (the same compiles)
  written two ways. They are built into a temporary folder under /tmp and deleted afterwards
  (``--keep DIR`` keeps them there and reuses them on the next run).

Commands, one round each per repeat, interleaved so drifting load hits all alike:
``tlparse TRACE -o DIR --overwrite --no-browser`` (DIR removed before each run, outside the timing: at
1 GiB it holds gigabytes of HTML), ``guarddiag parse -f json TRACE`` (skipped while guarddiag refuses
traces) and ``guarddiag parse -f json LOG``, stdout to /dev/null. Plus the start-up of ``guarddiag
version``. One more run of each guarddiag command keeps its JSON, to check that the trace and the text
log give the same totals and functions. Appends a section to ``bench/results.md`` with the machine and
its load average before each size.

    python bench/trace_bench.py                      # both sizes, 11 rounds on the recorded run, 3 at 1 GiB
    python bench/trace_bench.py --sizes recorded --repeats 5 --results -     # try-out, prints only
    python bench/trace_bench.py --keep /tmp/gd-scaled                        # keep the 1 GiB files for the next run
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_scaled_log  # noqa: E402  (sibling scripts, not a package)
import make_scaled_trace  # noqa: E402
import run_bench  # noqa: E402
from run_bench import BenchError, Sample  # noqa: E402

BENCH = Path(__file__).resolve().parent
MB = 1e6
TLPARSE, TRACE, TEXT = "tlparse", "guarddiag parse -f json TRACE", "guarddiag parse -f json LOG"
# The summary of a run record that the trace and the text log of one run must agree on.
FUNCTION_FIELDS = ("name", "file", "line", "compiles", "recompiles", "limit_hit")


@dataclass(frozen=True)
class Case:
    """One size: the trace and the text log of the same run, and how often to run each command."""

    name: str
    trace: Path
    log: Path
    repeats: int
    how: str


@dataclass(frozen=True)
class Measured:
    """The samples of every command on one case, and the machine load before it."""

    case: Case
    samples: dict[str, list[Sample]]
    load: str
    record_check: str


def tlparse() -> str:
    return run_bench.tool("tlparse", "pip install tlparse (a prebuilt binary wheel; or pip install -e '.[bench]')")


def reads_traces(trace: Path) -> bool:
    """Whether this guarddiag parses a TORCH_TRACE file (before issue 27 it refuses one, exit 2)."""
    proc = subprocess.run([run_bench.guarddiag(), "parse", "-f", "json", str(trace)], capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return True
    if "trace" in proc.stderr and proc.returncode == 2:
        return False
    raise BenchError(f"`guarddiag parse -f json {trace}` exited {proc.returncode}: {proc.stderr.strip()[-400:]}")


def commands(case: Case, out: Path, with_trace: bool) -> dict[str, list[str]]:
    cmds = {TLPARSE: [tlparse(), str(case.trace), "-o", str(out), "--overwrite", "--no-browser"]}
    if with_trace:
        cmds[TRACE] = [run_bench.guarddiag(), "parse", "-f", "json", str(case.trace)]
    cmds[TEXT] = [run_bench.guarddiag(), "parse", "-f", "json", str(case.log)]
    return cmds


def summary(record: dict[str, Any]) -> dict[str, Any]:
    """What the trace and the text log of one run must agree on: totals, each function's counts, each recompile's causes."""
    functions = [f for f in record.get("functions") or [] if isinstance(f, dict)]
    return {
        "totals": record.get("totals") or {},
        "functions": [{k: f.get(k) for k in FUNCTION_FIELDS} for f in functions],
        "causes": [
            (event.get("compile_id"), [cause.get("category") for cause in event.get("causes") or []])
            for f in functions
            for event in f.get("recompile_events") or []
        ],
    }


def check_records(case: Case) -> str:
    """Compare the JSON of ``parse`` on the trace and on the text log: what agrees, or what differs.

    Totals the text log cannot know (null there, e.g. compile times, which only the trace's metrics hold)
    are left out of the comparison and named."""
    records = []
    for path in (case.trace, case.log):
        proc = subprocess.run([run_bench.guarddiag(), "parse", "-f", "json", str(path)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return f"`parse -f json {path.name}` exited {proc.returncode}"
        records.append(summary(json.loads(proc.stdout)))
    trace, text = records
    trace_only = sorted(k for k, v in text["totals"].items() if v is None and trace["totals"].get(k) is not None)
    for key in trace_only:
        del trace["totals"][key], text["totals"][key]
    if trace == text:
        counts = ", ".join(f"{k} {v}" for k, v in text["totals"].items() if v is not None)
        extra = f"; from the trace only: {', '.join(trace_only)}" if trace_only else ""
        return f"same totals ({counts}), per-function counts and recompile causes{extra}"
    diffs = [f"{key}: trace {trace[key]} / text {text[key]}" for key in trace if trace[key] != text[key]]
    return "DIFFER: " + "; ".join(diffs)[:1000]


def measure_case(case: Case, with_trace: bool) -> Measured:
    run_bench.count_lines(case.trace)  # page cache warm: disk speed is not measured
    run_bench.count_lines(case.log)
    load = run_bench.load_average()
    samples: dict[str, list[Sample]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-trace-tlparse-") as tmp:
        out = Path(tmp) / "out"
        cmds = commands(case, out, with_trace)
        for round_no in range(case.repeats):
            print(f"  [{case.name}] round {round_no + 1}/{case.repeats} (load {run_bench.load_average()})", file=sys.stderr)
            for name, cmd in cmds.items():
                shutil.rmtree(out, ignore_errors=True)  # tlparse's --overwrite would delete it inside the timing
                samples.setdefault(name, []).append(run_bench.measure(cmd))
        shutil.rmtree(out, ignore_errors=True)
    check = check_records(case) if with_trace else "guarddiag does not read traces yet"
    return Measured(case, samples, load, check)


def spread(values: Sequence[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def rows(measured: Measured) -> list[str]:
    case, samples = measured.case, measured.samples
    t_tlparse = run_bench.median_wall(samples[TLPARSE])
    lines = []
    for name, runs in samples.items():
        path = case.log if name == TEXT else case.trace
        walls = [s.wall_s for s in runs]
        t = statistics.median(walls)
        cpu = statistics.median(s.cpu_s for s in runs)
        rss = max(s.maxrss_mib for s in runs)
        paired = statistics.median(s.wall_s / base.wall_s for s, base in zip(runs, samples[TLPARSE], strict=True))
        cpu_ratio = cpu / statistics.median(s.cpu_s for s in samples[TLPARSE])
        ratio = "1" if name == TLPARSE else f"**{t / t_tlparse:.2f}x** (paired {paired:.2f}x; CPU {cpu_ratio:.2f}x)"
        lines.append(
            f"| {case.name} | `{name}` | {path.stat().st_size / MB:,.1f} MB | {t:.3f} s ({spread(walls)}; {len(runs)} runs: "
            f"{', '.join(f'{w:.2f}' for w in walls)}) | {path.stat().st_size / MB / t:.0f} | {cpu:.3f} s | {rss:.0f} MiB | {ratio} |"
        )
    return lines


def render(facts: list[tuple[str, str]], version: str, startup: list[Sample], results: list[Measured], load_end: str, label: str) -> str:
    lines = [f"## {facts[0][1]} UTC: guarddiag on a TORCH_TRACE vs tlparse, {label} (issue 27 §3, bench/trace_bench.py)", ""]
    lines += ["| machine | |", "|---|---|", *(f"| {k} | {v} |" for k, v in facts)]
    lines += [f"| load average at end (1, 5, 15 min) | {load_end} |", f"| tlparse | {version} |", ""]
    walls = [s.wall_s for s in startup]
    lines += [
        f"`guarddiag version` (start-up, in every guarddiag time below): median {statistics.median(walls):.3f} s "
        f"({spread(walls)}, {len(walls)} runs), CPU {statistics.median(s.cpu_s for s in startup):.3f} s.",
        "",
    ]
    for m in results:
        lines.append(f"- {m.case.name}: {m.case.how}; load average before: {m.load}; trace vs text record: {m.record_check}.")
    lines += [
        "",
        "| size | command | file | wall: median (min-max; runs) | MB/s | CPU median | peak RSS | / tlparse: wall (paired; CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in results:
        lines += rows(m)
    return "\n".join(lines) + "\n"


def recorded_case(repeats: int) -> Case:
    log = run_bench.model_log()
    trace = run_bench.trace_file()
    return Case("recorded run", trace, log, repeats, f"{log.name} and {trace.name}, one run of bench/guard_heavy_model.py (60 blocks)")


def scaled_case(size: int, repeats: int, folder: Path) -> Case:
    """The trace scaled to about ``size`` and the text log scaled to the same number of copies, built unless already in ``folder``."""
    source_trace, source_log = run_bench.trace_file(), run_bench.model_log()
    trace = folder / "trace" / "dedicated_log_torch_trace_scaled.log"
    log = folder / "scaled.log"
    trace_facts = run_bench.sidecar(trace) if trace.is_file() else None
    if trace_facts is None or abs(int(trace_facts["bytes"]) - size) > size * 0.05:  # type: ignore[call-overload]
        print(f"building {trace} (~{size / 2**20:.0f} MiB) ...", file=sys.stderr)
        trace_facts = make_scaled_trace.build(source_trace, trace, size)
    copies = int(trace_facts["copies"])  # type: ignore[call-overload]
    log_facts = run_bench.sidecar(log) if log.is_file() else None
    if log_facts is None or log_facts.get("copies") != copies:
        print(f"building {log} ({copies} copies) ...", file=sys.stderr)
        make_scaled_log.build(source_log, log, copies * source_log.stat().st_size)
    how = f"{copies} copies of the recorded run, each a new compile of the same two frames (make_scaled_trace.py, make_scaled_log.py)"
    return Case(f"{trace.stat().st_size / 2**30:.2f} GiB", trace, log, repeats, how)


def main(argv: Sequence[str] | None = None) -> int:
    doc = __doc__.splitlines()
    parser = argparse.ArgumentParser(description=doc[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog="\n".join(doc[-4:]))
    parser.add_argument("--sizes", nargs="+", choices=("recorded", "scaled"), default=["recorded", "scaled"])
    parser.add_argument("--repeats", type=int, default=11, help="rounds on the recorded run (default 11)")
    parser.add_argument("--big-repeats", type=int, default=3, help="rounds on the scaled files (default 3)")
    parser.add_argument("--startup-repeats", type=int, default=21, help="runs of `guarddiag version` (default 21)")
    parser.add_argument("--scaled-size", type=make_scaled_log.parse_size, default=2**30, help="size of the scaled trace (default 1GiB)")
    parser.add_argument("--keep", type=Path, help="build the scaled files here and keep them (default: a temporary folder, deleted)")
    parser.add_argument("--label", default="as committed", help="what was measured, for the section title")
    parser.add_argument("--results", default=str(BENCH / "results.md"), help="results file to append to; - prints only")
    args = parser.parse_args(argv)
    facts = run_bench.machine()
    started = time.monotonic()
    try:
        version = subprocess.run([tlparse(), "--version"], capture_output=True, text=True, check=False).stdout.strip()
        with_trace = reads_traces(run_bench.trace_file())
        if not with_trace:
            print("guarddiag refuses TORCH_TRACE files: measuring tlparse and the text log only", file=sys.stderr)
        startup = [run_bench.measure([run_bench.guarddiag(), "version"]) for _ in range(args.startup_repeats)]
        results = []
        if "recorded" in args.sizes:
            results.append(measure_case(recorded_case(args.repeats), with_trace))
        if "scaled" in args.sizes:
            with tempfile.TemporaryDirectory(prefix="guarddiag-trace-bench-", dir="/tmp") as tmp:
                folder = args.keep or Path(tmp)
                results.append(measure_case(scaled_case(args.scaled_size, args.big_repeats, folder), with_trace))
    except (BenchError, SystemExit) as exc:
        print(f"trace_bench: {exc}", file=sys.stderr)
        return 2
    section = render(facts, version, startup, results, run_bench.load_average(), args.label)
    print(section)
    print(f"took {time.monotonic() - started:.0f} s", file=sys.stderr)
    if args.results != "-":
        run_bench.append_results(Path(args.results), section)
        print(f"appended to {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
