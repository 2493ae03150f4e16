"""What counting the calls a compiler stance refused costs a call (issue 25).

guarddiag's child wraps torch's ``_callback_from_stance`` (``guarddiag/child/_site/_guarddiag_stance.py``):
every call of a compiled function pays one Python call more, and a call ``eager_on_recompile`` refuses
pays a callback, torch's reasons for each cache entry and a count. This measures both, each in a fresh
process with and without the hook, on a small compiled module (``backend="eager"``, 2 cache entries):

* ``hit``: a call whose cache entry matches (default stance), the price every compiled call pays;
* ``refused``: a call ``eager_on_recompile`` runs eagerly (no entry matches), torch's own eager run
  plus what counting it adds.

    python bench/stance_overhead.py                 # prints the table, appends it to bench/results.md
    python bench/stance_overhead.py --calls 2000 --repeats 7 --results /dev/null
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SITE = BENCH.parent / "guarddiag" / "child" / "_site"


def measure(hooked: bool, calls: int, repeats: int) -> dict[str, float]:
    """Per-call microseconds (the best of ``repeats`` medians) of a hit and of a refused call, in this process."""
    if hooked:
        sys.path.insert(0, str(SITE))
        import _guarddiag_process
        import _guarddiag_stance

        _guarddiag_process.add_sink(lambda record: None)
        _guarddiag_stance.install()
    import torch

    torch.set_num_threads(1)  # the machine's other work moves a multi-threaded op's time far more than the hook's
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval()
    compiled = torch.compile(model, backend="eager", dynamic=False)
    hit, miss = torch.randn(4, 64), torch.randn(5, 64)
    with torch.no_grad():
        compiled(hit)
        compiled(torch.randn(8, 64))
        out = {"hit": _per_call(lambda: compiled(hit), calls, repeats)}
        torch.compiler.set_stance("eager_on_recompile")
        out["refused"] = _per_call(lambda: compiled(miss), calls, repeats)
        torch.compiler.set_stance("default")
    return out


def _per_call(call, calls: int, repeats: int) -> float:  # noqa: ANN001
    best = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            call()
        best.append((time.perf_counter() - started) / calls * 1e6)
    return min(best)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per variant (the median is kept)")
    parser.add_argument("--results", default=str(BENCH / "results.md"))
    parser.add_argument("--child", choices=("plain", "hooked"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child == "hooked", args.calls, args.repeats)))
        return 0
    found: dict[str, list[dict[str, float]]] = {"plain": [], "hooked": []}
    for _ in range(args.processes):
        for variant in found:
            cmd = [sys.executable, __file__, "--child", variant, "--calls", str(args.calls), "--repeats", str(args.repeats)]
            found[variant].append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
    rows = []
    for kind in ("hit", "refused"):
        plain = statistics.median(r[kind] for r in found["plain"])
        hooked = statistics.median(r[kind] for r in found["hooked"])
        rows.append(f"| {kind} | {plain:.1f} | {hooked:.1f} | {hooked - plain:+.1f} ({(hooked / plain - 1) * 100:+.0f}%) |")
    import torch

    table = "\n".join([
        f"## stance hook overhead ({time.strftime('%Y-%m-%d')}, torch {torch.__version__}, python {sys.version.split()[0]})",
        "",
        f"Per call, microseconds: best of {args.repeats} x {args.calls} calls, median of {args.processes} processes each.",
        "",
        "| call | without hook | with hook | added |",
        "|---|---|---|---|",
        *rows,
        "",
    ])
    print(table)
    if args.results != "/dev/null":
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write("\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
