"""guarddiag benchmarks of issue 7: parse throughput and memory, tlparse, run overhead, compare.

Every number is the median of several runs of a real subprocess, printed with its context and
the issue's target, and appended with the machine facts to ``bench/results.md``. See
``bench/README.md`` for what each number means.

    python bench/run_bench.py                 # everything (builds a 1 GiB scaled log, deletes it after)
    python bench/run_bench.py --quick         # small scaled log, 1 repeat: a try-out
    python bench/run_bench.py --only parse    # parse|tlparse|run|compare, repeatable
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_scaled_log  # noqa: E402  (a sibling script, not a package)

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "data"
SECTIONS = ("parse", "tlparse", "run", "compare")
MB = 1e6  # throughput in MB = 10^6 bytes; memory in MiB
TIMEOUT_S = 3600.0

# The targets of issue 7.
PARSE_MB_S = 100.0
RSS_MIB = 150.0
RSS_GROWTH_MIB = 10.0  # "must not grow with size": allowance for allocator noise
GROWTH_FACTOR = 16  # growth is measured between the scaled log and one this many times smaller
TLPARSE_RATIO = 1.0
RUN_OVERHEAD = 1.10
COMPARE_RATIO = 0.65

# Sub-second measures (start-up, model.log, tlparse) are taken at least this often: a 0.2 s run
# varies by +-0.05 s here with other processes about, and a median of 3 followed that noise.
FAST_REPEATS = 11


class BenchError(Exception):
    """A benchmark could not be measured; the message says what is missing and how to get it."""


@dataclass(frozen=True)
class Sample:
    """One finished subprocess: wall time, the peak RSS of that process alone, its CPU time (user + system)."""

    wall_s: float
    maxrss_mib: float
    cpu_s: float = 0.0


@dataclass(frozen=True)
class Row:
    """One reported number: what was measured, on what, the value, the target and the verdict."""

    measure: str
    context: str
    value: str
    target: str = ""
    status: str = ""


@dataclass
class Settings:
    """What to measure and how often."""

    repeats: int
    big_repeats: int
    sections: tuple[str, ...]
    scaled_size: int
    scaled_path: Path | None
    keep_scaled: bool
    script: Path
    flag: str
    quick: bool
    rows: list[Row] = field(default_factory=list)

    @property
    def fast_repeats(self) -> int:
        """Runs per median of a sub-second measure: ``--repeats``, at least FAST_REPEATS (1 with --quick)."""
        return self.repeats if self.quick else max(self.repeats, FAST_REPEATS)


def measure(cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = TIMEOUT_S) -> Sample:
    """Run ``cmd`` with stdout to /dev/null; its wall time and peak RSS, taken by ``_measure.py`` (see why there)."""
    with tempfile.TemporaryFile() as stderr, tempfile.TemporaryDirectory(prefix="bench-measure-") as tmp:
        record_path = Path(tmp) / "sample.json"
        launcher = [sys.executable, "-S", str(BENCH / "_measure.py"), str(record_path), str(timeout), *cmd]
        subprocess.run(launcher, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, check=False)
        if not record_path.is_file():
            raise BenchError(f"the measuring process for `{' '.join(cmd)}` wrote no result; is {BENCH / '_measure.py'} intact?")
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if record["exit_code"] != 0:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace").strip().splitlines()[-6:] or ["(nothing on stderr)"]
            why = "killed after --timeout" if record["exit_code"] == -signal.SIGKILL else f"exited {record['exit_code']}"
            raise BenchError(f"`{' '.join(cmd)}` {why} after {record['wall_s']:.1f} s:\n    " + "\n    ".join(tail))
    return Sample(record["wall_s"], record["maxrss_kib"] / 1024, record["cpu_s"])


def repeat(times: int, run: Callable[[], Sample]) -> list[Sample]:
    """``times`` samples of ``run``, one after the other."""
    return [run() for _ in range(times)]


def median_wall(samples: Sequence[Sample]) -> float:
    return statistics.median(s.wall_s for s in samples)


def walls(samples: Sequence[Sample]) -> str:
    return ", ".join(f"{s.wall_s:.2f}" for s in samples)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def tool(name: str, hint: str) -> str:
    """The executable ``name`` next to this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise BenchError(f"{name} not found next to {sys.executable} nor on PATH; {hint}")
    return found


def guarddiag() -> str:
    return tool("guarddiag", "install guarddiag into this interpreter: pip install -e '.[bench]'")


def plain_env() -> dict[str, str]:
    """The environment without torch logging, so the plain runs log nothing."""
    return {k: v for k, v in os.environ.items() if k not in ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG")}


def count_lines(path: Path) -> int:
    """Newlines in ``path``, read in chunks; this also pulls the file into the page cache."""
    lines = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines


def model_log() -> Path:
    path = DATA / "model.log"
    if not path.is_file():
        raise BenchError(f"{path} not found; run `python bench/make_model_log.py` first (about a minute)")
    return path


def trace_file() -> Path:
    traces = sorted((DATA / "trace").glob("*.log"), key=lambda p: p.stat().st_size, reverse=True)
    if not traces:
        raise BenchError(f"no TORCH_TRACE file in {DATA / 'trace'}; run `python bench/make_model_log.py` first")
    return traces[0]


# ---- parse ---------------------------------------------------------------------------------


def parse_once(log: Path) -> Sample:
    return measure([guarddiag(), "parse", str(log)])


def parse_rows(settings: Settings, log: Path, lines: int, samples: Sequence[Sample], how: str = "") -> float:
    """Throughput and RSS rows for one log; returns the peak RSS in MiB."""
    size = log.stat().st_size
    t = median_wall(samples)
    rss = max(s.maxrss_mib for s in samples)
    context = (
        f"`guarddiag parse {log.name} > /dev/null`{how}, {size / MB:.1f} MB, {lines:,} lines, page cache warm; "
        f"median of {len(samples)} ({walls(samples)} s)"
    )
    mb_s = size / MB / t
    settings.rows.append(
        Row(
            f"parse throughput, {log.name}",
            context,
            f"{t:.2f} s = **{mb_s:.1f} MB/s**, {lines / t:,.0f} lines/s",
            f">= {PARSE_MB_S:.0f} MB/s",
            verdict(mb_s >= PARSE_MB_S),
        )
    )
    return rss


def bench_parse(settings: Settings, cache: dict[str, object]) -> None:
    log = model_log()
    lines = count_lines(log)
    startup = repeat(settings.fast_repeats, lambda: measure([guarddiag(), "version"]))
    settings.rows.append(
        Row(
            "startup",
            f"`guarddiag version` (interpreter + imports, included in every parse time); median of {len(startup)} ({walls(startup)} s)",
            f"{median_wall(startup):.2f} s",
        )
    )
    model_samples = repeat(settings.fast_repeats, lambda: parse_once(log))
    model_rss = parse_rows(settings, log, lines, model_samples)
    settings.rows.append(
        Row(
            "peak RSS, model.log",
            "max ru_maxrss of the `guarddiag parse` process (fork + wait4 in bench/_measure.py) over the runs above",
            f"{model_rss:.0f} MiB",
        )
    )

    scaled, built = scaled_log(settings)
    try:
        facts = sidecar(scaled)
        scaled_lines = count_lines(scaled)  # also warms the page cache, like the repeated model.log runs
        how = f" ({facts['copies']} copies of model.log, {facts['mode']})" if facts else " (given with --scaled)"
        scaled_samples = repeat(settings.big_repeats, lambda: parse_once(scaled))
        scaled_rss = parse_rows(settings, scaled, scaled_lines, scaled_samples, how)
        size_gib = scaled.stat().st_size / 2**30
    finally:
        if built and not settings.keep_scaled:
            scaled.unlink(missing_ok=True)
            Path(str(scaled) + ".json").unlink(missing_ok=True)
    settings.rows.append(
        Row(
            f"peak RSS, {scaled.name}",
            f"max ru_maxrss of the `guarddiag parse` process (fork + wait4 in bench/_measure.py), {size_gib:.2f} GiB log",
            f"{scaled_rss:.0f} MiB",
            f"< {RSS_MIB:.0f} MB",
            verdict(scaled_rss < RSS_MIB),
        )
    )
    small_size = max(settings.scaled_size // GROWTH_FACTOR, 1)
    small = DATA / "scaled-small.log"
    try:
        facts = make_scaled_log.build(model_log(), small, small_size)
        small_rss = parse_once(small).maxrss_mib
    finally:
        small.unlink(missing_ok=True)
        Path(str(small) + ".json").unlink(missing_ok=True)
    growth = scaled_rss - small_rss
    settings.rows.append(
        Row(
            "RSS growth with log size",
            f"peak RSS on {scaled.name} minus on a scaled log about 1/{GROWTH_FACTOR} its size built the same way "
            f"({facts['copies']} copies, {int(facts['bytes']) / MB:.0f} MB: {small_rss:.0f} MiB, 1 run); model.log: {model_rss:.0f} MiB",
            f"{growth:+.0f} MiB",
            f"does not grow (<= +{RSS_GROWTH_MIB:.0f} MiB)",
            verdict(growth <= RSS_GROWTH_MIB),
        )
    )


def sidecar(log: Path) -> dict[str, object] | None:
    """The facts make_scaled_log wrote beside ``log``, if they still describe it."""
    meta = Path(str(log) + ".json")
    if not meta.is_file():
        return None
    facts = json.loads(meta.read_text(encoding="utf-8"))
    return facts if facts.get("bytes") == log.stat().st_size else None


def scaled_log(settings: Settings) -> tuple[Path, bool]:
    """The scaled log to parse and whether this run built it (and so deletes it)."""
    if settings.scaled_path is not None:
        if not settings.scaled_path.is_file():
            raise BenchError(
                f"--scaled {settings.scaled_path} not found; build one with `python bench/make_scaled_log.py --out {settings.scaled_path}`"
            )
        return settings.scaled_path, False
    path = DATA / ("scaled-quick.log" if settings.quick else "scaled.log")
    facts = sidecar(path) if path.is_file() else None
    if facts is not None and abs(int(facts["bytes"]) - settings.scaled_size) < settings.scaled_size * 0.05:  # type: ignore[call-overload]
        print(f"using {path} ({facts['bytes']} bytes, built earlier)", file=sys.stderr)
        return path, False
    print(f"building {path} ({settings.scaled_size / 2**20:.0f} MiB) ...", file=sys.stderr)
    make_scaled_log.build(model_log(), path, settings.scaled_size)
    return path, True


# ---- tlparse -------------------------------------------------------------------------------


def bench_tlparse(settings: Settings, cache: dict[str, object]) -> None:
    log, trace = model_log(), trace_file()
    tlparse = tool("tlparse", "pip install tlparse (a prebuilt binary wheel)")
    count_lines(trace)
    samples: list[Sample] = []
    ours: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix="bench-tlparse-") as out:
        for _ in range(settings.fast_repeats):  # interleaved, so drifting machine load hits both alike
            samples.append(measure([tlparse, str(trace), "-o", out, "--overwrite", "--no-browser"]))
            ours.append(parse_once(log))
    t = median_wall(samples)
    version = subprocess.run([tlparse, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    size = trace.stat().st_size
    settings.rows.append(
        Row(
            "tlparse",
            f"`{version} {trace.name} -o DIR --overwrite --no-browser`, the TORCH_TRACE of the run that wrote model.log, "
            f"{size / MB:.1f} MB; median of {len(samples)} ({walls(samples)} s); peak RSS {max(s.maxrss_mib for s in samples):.0f} MiB",
            f"{t:.2f} s = {size / MB / t:.1f} MB/s",
        )
    )
    ratio = median_wall(ours) / t
    settings.rows.append(
        Row(
            "guarddiag / tlparse",
            f"median `guarddiag parse model.log` ({median_wall(ours):.2f} s; {walls(ours)} s, each run right after a tlparse run) "
            f"over median tlparse ({t:.2f} s); same run, different files: torch's text log vs its structured trace",
            f"**{ratio:.2f}x**",
            f"< {TLPARSE_RATIO:.1f}",
            verdict(ratio < TLPARSE_RATIO),
        )
    )


# ---- run overhead --------------------------------------------------------------------------


def bench_run(settings: Settings, cache: dict[str, object]) -> None:
    script = settings.script.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as work:
        cwd = Path(work)
        plain = lambda: measure([sys.executable, str(script)], cwd=cwd, env=plain_env())  # noqa: E731
        logged = lambda: measure([guarddiag(), "run", str(script)], cwd=cwd, env=plain_env())  # noqa: E731
        if not settings.quick:
            plain()  # warm-up: file cache for torch's imports
        plain_samples: list[Sample] = []
        run_samples: list[Sample] = []
        for _ in range(settings.repeats):  # interleaved, so drifting machine load hits both alike
            plain_samples.append(plain())
            run_samples.append(logged())
    t_plain, t_run = median_wall(plain_samples), median_wall(run_samples)
    cache["run"] = run_samples
    name = _rel(script)
    settings.rows.append(
        Row(
            "plain python",
            f"`python {name}` without TORCH_LOGS; median of {len(plain_samples)} ({walls(plain_samples)} s)",
            f"{t_plain:.2f} s",
        )
    )
    settings.rows.append(
        Row(
            "guarddiag run",
            f"`guarddiag run {name}` (logging, parsing, report, run record); median of {len(run_samples)} ({walls(run_samples)} s)",
            f"{t_run:.2f} s",
        )
    )
    ratio = t_run / t_plain
    settings.rows.append(
        Row(
            "run overhead",
            "guarddiag run / plain python, medians, runs interleaved",
            f"**{ratio:.2f}x**",
            f"<= {RUN_OVERHEAD:.2f}x",
            verdict(ratio <= RUN_OVERHEAD),
        )
    )


# ---- compare -------------------------------------------------------------------------------


def bench_compare(settings: Settings, cache: dict[str, object]) -> None:
    script = settings.script.resolve()
    flag = settings.flag
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as work:
        cwd = Path(work)
        compare_samples: list[Sample] = []
        sums: list[float] = []
        for _ in range(settings.repeats):
            compare_samples.append(measure([guarddiag(), "compare", str(script), "--flag", flag], cwd=cwd, env=plain_env()))
            baseline = measure([guarddiag(), "run", str(script)], cwd=cwd, env=plain_env())
            flipped = measure([guarddiag(), "run", str(script), "--flag", f"{flag}={flipped_value(flag)}"], cwd=cwd, env=plain_env())
            sums.append(baseline.wall_s + flipped.wall_s)
    t_compare, t_sum = median_wall(compare_samples), statistics.median(sums)
    name = _rel(script)
    settings.rows.append(
        Row(
            "guarddiag compare",
            f"`guarddiag compare {name} --flag {flag}` (2 configurations, --jobs = {os.cpu_count()} cores); "
            f"median of {len(compare_samples)} ({walls(compare_samples)} s)",
            f"{t_compare:.2f} s",
        )
    )
    settings.rows.append(
        Row(
            "two single runs",
            f"`guarddiag run` baseline + `guarddiag run --flag {flag}=<flipped>`, summed per repeat; "
            f"median of {len(sums)} ({', '.join(f'{s:.2f}' for s in sums)} s)",
            f"{t_sum:.2f} s",
        )
    )
    ratio = t_compare / t_sum
    settings.rows.append(
        Row(
            "compare / single runs",
            "compare wall time over the sum of the two single runs, medians",
            f"**{ratio:.2f}x**",
            f"<= {COMPARE_RATIO:.2f}x",
            verdict(ratio <= COMPARE_RATIO),
        )
    )


def flipped_value(flag: str) -> str:
    """The opposite of the flag's default in the target torch (read from `guarddiag flags`)."""
    out = subprocess.run([guarddiag(), "flags", flag, "--format", "json"], capture_output=True, text=True, check=False)
    try:
        value = next(e["value"] for e in json.loads(out.stdout)["flags"] if e["name"] == flag)
    except (ValueError, StopIteration, KeyError, TypeError, AttributeError) as exc:
        raise BenchError(
            f"could not read the default of {flag} from `guarddiag flags {flag} --format json` ({exc}); pass a boolean --flag"
        ) from exc
    if not isinstance(value, bool):
        raise BenchError(f"--flag {flag} is not a boolean (default {value!r}); the compare benchmark flips a boolean flag")
    return str(not value)


# ---- report --------------------------------------------------------------------------------


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every number."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def machine() -> list[tuple[str, str]]:
    """The facts every number depends on."""
    cpu = platform.processor() or platform.machine()
    ram = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    commit = _git("rev-parse", "--short", "HEAD") or "?"
    if _git("status", "--porcelain", "--", "guarddiag"):
        commit += " + uncommitted changes in guarddiag/"
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = "not installed"
    return [
        ("date (UTC)", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")),
        ("nproc", str(os.cpu_count())),
        ("CPU", cpu),
        ("RAM", ram),
        ("python", platform.python_version()),
        ("torch", torch),
        ("guarddiag commit", commit),
        ("load average at start (1, 5, 15 min)", load_average()),
    ]


def render(facts: list[tuple[str, str]], settings: Settings, load_end: str) -> str:
    mode = "quick" if settings.quick else "full"
    lines = [f"## {facts[0][1]} UTC: {', '.join(settings.sections)} ({mode})", "", "| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in facts]
    lines += [
        f"| load average at end (1, 5, 15 min) | {load_end} |",
        "",
        "| measure | context | value | target | status |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r.measure} | {r.context} | {r.value} | {r.target} | {r.status} |" for r in settings.rows]
    return "\n".join(lines) + "\n"


def append_results(path: Path, section: str) -> None:
    """Append ``section`` to the results file, atomically (temp file, then replace)."""
    header = (
        "# guarddiag benchmark results\n\n"
        "Appended by `make bench` (bench/run_bench.py); newest last. What each number means: bench/README.md.\n"
    )
    old = path.read_text(encoding="utf-8") if path.exists() else header
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(old.rstrip("\n") + "\n\n" + section, encoding="utf-8")
    os.replace(tmp, path)


def parse_args(argv: Sequence[str] | None) -> tuple[Settings, Path]:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[5:]),
    )
    parser.add_argument("--quick", action="store_true", help="a 64 MiB scaled log and 1 repeat, to try it out")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="measure only this section (repeatable)")
    parser.add_argument("--repeats", type=int, help="runs per median (default 3, at least 11 for the sub-second measures; 1 with --quick)")
    parser.add_argument("--big-repeats", type=int, default=1, help="runs on the scaled log (default 1)")
    parser.add_argument("--scaled-size", type=make_scaled_log.parse_size, help="scaled log size (default 1GiB; 64MiB with --quick)")
    parser.add_argument("--scaled", type=Path, help="parse this scaled log instead of building one")
    parser.add_argument("--keep-scaled", action="store_true", help="keep the scaled log this run built (default: delete it)")
    parser.add_argument("--script", type=Path, default=BENCH / "overhead_script.py", help="script for run and compare")
    parser.add_argument(
        "--flag", default="automatic_dynamic_shapes", help="boolean flag the compare flips (default automatic_dynamic_shapes)"
    )
    parser.add_argument("--results", type=Path, default=BENCH / "results.md", help="results file to append to")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    if repeats < 1 or args.big_repeats < 1:
        parser.error("--repeats and --big-repeats must be at least 1")
    size = args.scaled_size or (64 * 2**20 if args.quick else 2**30)
    sections = tuple(s for s in SECTIONS if s in (args.only or SECTIONS))
    settings = Settings(repeats, args.big_repeats, sections, size, args.scaled, args.keep_scaled, args.script, args.flag, args.quick)
    return settings, args.results


def main(argv: Sequence[str] | None = None) -> int:
    settings, results = parse_args(argv)
    benches = {"parse": bench_parse, "tlparse": bench_tlparse, "run": bench_run, "compare": bench_compare}
    facts = machine()
    cache: dict[str, object] = {}
    try:
        if not settings.script.is_file():
            raise BenchError(f"--script {settings.script} not found")
        for name in settings.sections:
            print(f"[{name}] ...", file=sys.stderr)
            started = time.monotonic()
            benches[name](settings, cache)
            print(f"[{name}] done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    except BenchError as exc:
        print(f"run_bench: {exc}", file=sys.stderr)
        return 2
    section = render(facts, settings, load_average())
    print(section)
    append_results(results, section)
    print(f"appended to {_rel(results.resolve())}", file=sys.stderr)
    misses = [r.measure for r in settings.rows if r.status == "MISS"]
    if misses:
        print(f"targets missed: {', '.join(misses)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
