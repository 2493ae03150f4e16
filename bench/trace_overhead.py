"""What ``guarddiag run --trace`` costs (issue 27): the same script run with and without a TORCH_TRACE folder.

Each script is run by the installed ``guarddiag run`` as a whole process, ``--trace`` and not in turn
(interleaved, so that drifting load hits both alike), after one unmeasured warm-up of each, in a temporary
working directory. Reported per script: the median wall time and CPU time (user + system, of guarddiag and
the processes it started) of each, the added seconds and share, and the size of the trace folder (median
over the runs). Output goes to /dev/null: what is measured is torch's
work in the child, guarddiag's start-up, parse and report.

    python bench/trace_overhead.py                       # prints the table, appends it to bench/results.md
    python bench/trace_overhead.py --repeats 3 --results /dev/null scenarios/tensor_shape.py
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SCRIPTS = (ROOT / "scenarios" / "tensor_shape.py", BENCH / "guard_heavy_model.py")


def one_run(guarddiag: str, script: Path, trace: bool, workdir: Path) -> tuple[float, float, int | None]:
    """Wall seconds of one ``guarddiag run`` of ``script``, the CPU seconds (user + system) of it and of every
    process it waited for, and the bytes of the trace folder it kept (None: no --trace). On a machine other
    sessions share, the CPU seconds move far less with their load than the wall time."""
    shutil.rmtree(workdir / ".guarddiag", ignore_errors=True)
    cmd = [guarddiag, "run", *(["--trace"] if trace else []), str(script)]
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_LOGS")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if not trace:
        return wall, cpu, None
    folders = list((workdir / ".guarddiag" / "runs").glob("*/trace"))
    return wall, cpu, sum(p.stat().st_size for folder in folders for p in folder.rglob("*") if p.is_file())


def measure(guarddiag: str, script: Path, repeats: int) -> dict[str, object]:
    """Every run's wall time without and with --trace, and the trace sizes, for one script."""
    with tempfile.TemporaryDirectory(prefix="guarddiag-trace-bench-") as tmp:
        workdir = Path(tmp)
        one_run(guarddiag, script, False, workdir)  # warm-up: the page cache holds torch and the script
        one_run(guarddiag, script, True, workdir)
        plain, traced, plain_cpu, traced_cpu, sizes = [], [], [], [], []
        for _ in range(repeats):
            wall, cpu, _ = one_run(guarddiag, script, False, workdir)
            plain.append(wall)
            plain_cpu.append(cpu)
            wall, cpu, size = one_run(guarddiag, script, True, workdir)
            traced.append(wall)
            traced_cpu.append(cpu)
            sizes.append(size or 0)
    return {"plain": plain, "traced": traced, "plain_cpu": plain_cpu, "traced_cpu": traced_cpu, "sizes": sizes}


def table(found: dict[Path, dict[str, object]], repeats: int) -> str:
    """The results as a Markdown section of results.md."""
    import torch  # the version the child runs with: the same interpreter here

    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load = os.getloadavg()
    lines = [
        f"## {when}: run --trace overhead (issue 27, bench/trace_overhead.py)",
        "",
        f"torch {torch.__version__}, python {platform.python_version()}, {os.cpu_count()} cores, load average "
        f"{load[0]:.2f} at the end. Median of {repeats} `guarddiag run` processes each, interleaved with and without",
        "`--trace`, after one warm-up of each; output to /dev/null.",
        "",
        "| script | measure | run | run --trace | added | every run (without / with) |",
        "|---|---|---|---|---|---|",
    ]
    for script, f in found.items():
        for measure, key in (("wall s", ""), ("CPU s", "_cpu")):
            plain, traced = statistics.median(f["plain" + key]), statistics.median(f["traced" + key])  # type: ignore[arg-type]
            every = " ".join(f"{a:.1f}" for a in f["plain" + key]) + " / " + " ".join(f"{b:.1f}" for b in f["traced" + key])  # type: ignore[union-attr]
            lines.append(
                f"| `{script.relative_to(ROOT)}` | {measure} | {plain:.2f} | {traced:.2f} "
                f"| {traced - plain:+.2f} ({(traced / plain - 1) * 100:+.0f}%) | {every} |"
            )
        size = statistics.median(f["sizes"]) / 1e6  # type: ignore[arg-type]
        lines.append(f"| `{script.relative_to(ROOT)}` | trace folder | | {size:.2f} MB | | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", type=Path, default=list(SCRIPTS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--results", default=str(BENCH / "results.md"))
    parser.add_argument("--guarddiag", default=str(Path(sys.executable).with_name("guarddiag")))
    args = parser.parse_args(argv)
    found = {s.resolve(): measure(args.guarddiag, s.resolve(), args.repeats) for s in args.scripts}
    section = table(found, args.repeats)
    print(section)
    with open(args.results, "a", encoding="utf-8") as fh:
        fh.write("\n" + section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
