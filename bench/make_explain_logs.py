"""Record the torch logs of the explain benchmark: ``bench/explain_model.py`` at N blocks each.

For every N (default 16, 64, 256, 1024) runs the model in a child interpreter with
``TORCH_LOGS=dynamo,guards,recompiles,graph_breaks`` and keeps its stderr as
``bench/data/explain/blocks-N.log`` (git-ignored). Logs already there are kept unless ``--force``.
The 1024-block run takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_model_log import BENCH, describe, record_log  # noqa: E402  (sibling scripts, not a package)

DATA = BENCH / "data" / "explain"
SIZES = (16, 64, 256, 1024)


def log_path(blocks: int, data: Path = DATA) -> Path:
    return data / f"blocks-{blocks}.log"


def record(blocks: int, python: str, data: Path = DATA, force: bool = False) -> Path:
    """The log of one run at ``blocks`` blocks, recorded unless present. SystemExit on failure."""
    path = log_path(blocks, data)
    if path.exists() and not force:
        return path
    print(describe(path, record_log("explain_model.py", blocks, python, path)), flush=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="blocks per model (default 16 64 256 1024)")
    parser.add_argument("--data", type=Path, default=DATA, help="default: bench/data/explain")
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch (default: this one)")
    parser.add_argument("--force", action="store_true", help="record again even if the log exists")
    args = parser.parse_args()
    for blocks in args.sizes:
        record(blocks, args.python, args.data, args.force)


if __name__ == "__main__":
    main()
