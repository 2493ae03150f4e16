"""How the logs given to ``guarddiag parse`` split into processes: a torchrun ``--log-dir``, per-rank
files, or pieces of one log.

torchrun's ``--log-dir D`` with ``--redirects``/``--tee`` (torch/distributed/elastic/multiprocessing/
api.py, ``DefaultLogsSpecs``) writes ``D/<run id>_<random>/attempt_<n>/<local rank>/stdout.log`` and
``stderr.log`` (and ``error.json`` when a worker fails; ``attempt_<n>/filtered_*.log`` repeat some
workers' lines and are not read). One worker's two files are pieces of its output, torch's lines in
``stderr.log``. The directory says the local rank, never the node (group) rank nor the global rank:
a worker is named by the ``[rankN]:`` prefix torch puts on its lines once ``init_process_group`` ran,
else ``localN`` (its directory), and the report says its rank is not known.

Several files: pieces of one log, joined as ``cat`` joins them (a CI log split in two), unless their
``[rankN]:`` prefixes show per-rank logs: every file shows at most one rank and together they show
at least two. Then each rank's files are its log, in the order given; a file that shows no rank is
a process of its own, ``logN`` (its place on the command line), whose rank is not known.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from guarddiag.errors import InputError
from guarddiag.filekinds import TORCH_TRACE, file_kind
from guarddiag.ids import LOCAL, LOG, MAIN_PROCESS, Process
from guarddiag.logparse.encoding import open_log

_ATTEMPT = re.compile(r"attempt_(\d+)")
# torch.distributed's rank prefix at a line's start, behind torchrun's --tee prefix if any.
_RANK_AT_START = re.compile(r"(?:\[(?!rank\d)[A-Za-z_][\w-]*?\d+\]:)?\[rank(\d+)\]:")
# torchrun's --tee prefix (role and local rank) and the rank behind it, if any.
_TEE = re.compile(r"(\[(?!rank\d)[A-Za-z_][\w-]*?\d+\]:)(?:\[rank(\d+)\]:)?")
# How far into a file to look for a --tee prefix before deciding it has none.
_TEE_PEEK = 1 << 16
# A worker's files, torch's log first (stderr), then what the script printed.
WORKER_FILES = ("stderr.log", "stdout.log")


@dataclass(frozen=True)
class ProcessFiles:
    """The files of one process, its label (the main process: as the lines' prefixes say) and how it got it."""

    files: tuple[str, ...]
    process: Process
    rank: int | None
    local_rank: int | None
    named_by: str


@dataclass(frozen=True)
class Layout:
    """What the inputs are: ``read_as`` (``one_log``: a single log; ``pieces``: pieces of one log;
    ``per_rank``; ``log_dir``), each process's files, and attempts of a log dir not read."""

    read_as: str
    processes: tuple[ProcessFiles, ...]
    skipped: tuple[str, ...] = ()


def layout(paths: Sequence[str]) -> Layout:
    """How to read ``paths``: a torchrun log dir, per-rank files, or one log in pieces."""
    # A file given twice (or under a symlink's name) is one log: read once, where it is first given.
    paths = _once(paths)
    dirs = [p for p in paths if p != "-" and Path(p).is_dir()]
    if dirs:
        if len(paths) > 1:
            raise InputError(
                f"{dirs[0]}: a directory among other inputs; give one torchrun --log-dir, or log files "
                "(merge the records of several nodes with `guarddiag merge`)"
            )
        return log_dir_layout(Path(dirs[0]))
    if len(paths) < 2 or "-" in paths:
        return Layout("one_log" if len(paths) < 2 else "pieces", (ProcessFiles(tuple(paths), MAIN_PROCESS, None, None, "prefix"),))
    shown = [ranks_in(Path(p)) for p in paths]
    if any(len(r) > 1 for r in shown) or len(set().union(*shown)) < 2:
        return Layout("pieces", (ProcessFiles(tuple(paths), MAIN_PROCESS, None, None, "prefix"),))
    by_rank: dict[int, list[str]] = {}
    unranked = []
    for position, (path, ranks) in enumerate(zip(paths, shown, strict=True), start=1):
        if ranks:
            by_rank.setdefault(next(iter(ranks)), []).append(path)
        else:
            unranked.append(ProcessFiles((path,), Process(LOG, position), None, None, "position"))
    ranked = [ProcessFiles(tuple(files), Process.of_rank(rank), rank, None, "prefix") for rank, files in sorted(by_rank.items())]
    return Layout("per_rank", (*ranked, *unranked))


# torch's name for a TORCH_TRACE file (torch/_logging/_internal.py LazyTraceHandler): ``rank_N_`` when
# torch.distributed was initialized at the process's first record.
TRACE_PREFIX = "dedicated_log_torch_trace_"
_TRACE_RANK = re.compile(rf"{TRACE_PREFIX}rank_(\d+)_")


def trace_layout(paths: Sequence[str]) -> Layout | None:
    """The processes of TORCH_TRACE inputs (files, or a folder ``TORCH_TRACE=DIR`` wrote), a file each;
    None when no input is a trace. A process is named by the rank in its file's name, else (several
    files) by the rank its records name, else by its place; a lone file without a rank in its name is
    the main process. Traces and logs given together
    are refused: they are read by different readers, and which run a log belongs to is not known."""
    paths = _once(paths)
    files: list[Path] = []
    others: list[str] = []
    for path in paths:
        if path == "-":
            others.append(path)
            continue
        found = Path(path)
        if found.is_dir():
            # Told by content: a folder of traces renamed by hand (rank0.log) is one too.
            traces = sorted(f for f in found.iterdir() if f.is_file() and is_trace(f))
            if traces:
                files.extend(traces)
            else:
                others.append(path)
        elif is_trace(found):
            files.append(found)
        else:
            others.append(path)
    if not files:
        return None
    if others:
        raise InputError(
            f"{others[0]}: not a TORCH_TRACE file, given with the trace {files[0]}; parse a trace and a torch log "
            "apart (a trace holds the compiles its text log holds)"
        )
    files = [Path(f) for f in _once([str(f) for f in files])]
    processes = []
    for position, file in enumerate(files, start=1):
        m = _TRACE_RANK.match(file.name)
        rank = int(m[1]) if m is not None else _record_rank(file) if len(files) > 1 else None
        if rank is not None:
            processes.append(ProcessFiles((str(file),), Process.of_rank(rank), rank, None, "file"))
        elif len(files) == 1:
            processes.append(ProcessFiles((str(file),), MAIN_PROCESS, None, None, "position"))
        else:
            processes.append(ProcessFiles((str(file),), Process(LOG, position), None, None, "position"))
    processes.sort(key=lambda p: p.process)
    named = [p.process for p in processes]
    if len(set(named)) < len(named):
        twice = next(p for p in named if named.count(p) > 1)
        raise InputError(f"two TORCH_TRACE files of {twice} among the inputs; give the traces of one run")
    return Layout("trace", tuple(processes))


# A record's rank (torch adds it to every envelope once torch.distributed is initialized): in a record's line,
# never in a payload line (those begin with a tab).
_RECORD_RANK = re.compile(rb'^[VIWEF]\d{4} .*?\] \{".*?, "rank": (\d+)[,}]')


def _record_rank(path: Path) -> int | None:
    """The rank a trace's records name, for a file torch named before torch.distributed was initialized
    (its first records compiled before ``init_process_group``); None when no record names one."""
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line[:1] != b"\t" and b'"rank": ' in line:
                    m = _RECORD_RANK.match(line)
                    if m is not None:
                        return int(m[1])
    except OSError:
        return None
    return None


def is_trace(path: Path) -> bool:
    """Whether ``path`` holds a TORCH_TRACE (its first line a glog prefix and a JSON record)."""
    return file_kind(path) is TORCH_TRACE


def log_dir_layout(root: Path) -> Layout:
    """The workers of the newest attempt under a torchrun ``--log-dir`` (or its run, attempt or
    worker directory), each named by its ``[rankN]:`` prefix, else by its local rank."""
    attempts = [Path(a) for a in _once([str(a) for a in _attempts(root)])]
    if not attempts:
        if any((root / name).is_file() for name in WORKER_FILES):  # one worker's directory
            return Layout("log_dir", (_worker(root),))
        raise InputError(
            f"{root}: not a torchrun --log-dir (no attempt_<n>/<local rank>/stderr.log under it); "
            "give log files, or the directory torchrun --log-dir wrote"
        )
    runs = sorted({a.parent for a in attempts})
    if len(runs) > 1:
        shown = ", ".join(r.name for r in runs[:4])
        raise InputError(f"{root}: holds the logs of {len(runs)} torchrun jobs ({shown}); give the directory of one of them")
    attempts.sort(key=lambda a: int(_ATTEMPT.fullmatch(a.name)[1]))  # type: ignore[index]
    newest = attempts[-1]
    workers = sorted((d for d in newest.iterdir() if d.is_dir() and d.name.isdigit()), key=lambda d: int(d.name))
    if not workers:
        raise InputError(f"{newest}: no worker directories (<local rank>/stderr.log) in it; did torchrun run with --redirects or --tee?")
    return Layout("log_dir", _distinct_workers(workers), tuple(str(a) for a in attempts[:-1]))


def _once(paths: Sequence[str]) -> list[str]:
    """``paths`` without those that lead where an earlier one does."""
    seen: set[str] = set()
    return [p for p in paths if not (_real(p) in seen or seen.add(_real(p)))]  # type: ignore[func-returns-value]


def _real(path: str) -> str:
    """Where a path leads, symlinks followed: one file is read once whatever names lead to it."""
    return path if path == "-" else os.path.realpath(path)


def _distinct_workers(folders: Sequence[Path]) -> tuple[ProcessFiles, ...]:
    """The workers of an attempt, each real file read once: a worker folder that is a symlink to another
    (or whose files are another's) adds nothing; real folders claim their files first. Two workers
    whose logs show one global rank are not one job's: refused, as ``merge`` refuses two nodes' ranks."""
    claimed: set[str] = set()
    found: dict[Path, ProcessFiles] = {}
    for folder in sorted(folders, key=lambda d: (d.is_symlink(), int(d.name))):
        worker = _worker(folder)
        files = tuple(f for f in worker.files if _real(f) not in claimed)
        claimed.update(_real(f) for f in worker.files)
        if files:
            found[folder] = worker if files == worker.files else _worker(folder, files)
    workers = [found[f] for f in folders if f in found]
    owner: dict[Process, ProcessFiles] = {}
    for w in workers:
        first = owner.setdefault(w.process, w) if w.rank is not None else w
        if first is not w:
            raise InputError(
                f"{os.path.dirname(w.files[0])}: {w.process} is also in {os.path.dirname(first.files[0])}; the workers of "
                "one torchrun job have distinct global ranks: give the log dir of one job, or its per-rank log files"
            )
    return tuple(workers)


def _attempts(root: Path) -> list[Path]:
    """``attempt_<n>`` directories at or up to two levels under ``root``."""
    if _ATTEMPT.fullmatch(root.name):
        return [root]
    found = [d for d in root.glob("attempt_*") if d.is_dir() and _ATTEMPT.fullmatch(d.name)]
    return found or [d for d in root.glob("*/attempt_*") if d.is_dir() and _ATTEMPT.fullmatch(d.name)]


def _worker(folder: Path, files: tuple[str, ...] | None = None) -> ProcessFiles:
    """One worker's process from its folder's files (``files``: those of them not read already)."""
    files = files if files is not None else tuple(str(folder / name) for name in WORKER_FILES if (folder / name).is_file())
    if not files:
        raise InputError(f"{folder}: no stderr.log or stdout.log; did torchrun run with --redirects or --tee?")
    local = int(folder.name) if folder.name.isdigit() else None
    ranks = set().union(*(ranks_in(Path(f)) for f in files))
    if len(ranks) == 1:
        rank = next(iter(ranks))
        return ProcessFiles(files, Process.of_rank(rank), rank, local, "prefix")
    if ranks:  # not one worker's log after all: read it as its prefixes say
        return ProcessFiles(files, MAIN_PROCESS, None, local, "prefix")
    if local is None:  # a worker's files in a folder of another name: not even the local rank is known
        return ProcessFiles(files, Process(LOG, 1), None, None, "position")
    return ProcessFiles(files, Process(LOCAL, local), None, local, "directory")


def tee_ranks(paths: Sequence[str]) -> dict[str, int]:
    """torchrun ``--tee`` output: each worker's ``[default1]:`` prefix and its global rank, read where
    both stand on one line (``[default1]:[rank1]:``). Its lines without a rank (before
    ``init_process_group``) are that rank's too. Empty when the files show no ``--tee`` prefix."""
    found: dict[str, int] = {}
    for path in paths:
        if path == "-":
            return {}
        try:
            with open_log(path) as fh:
                if _TEE.search(fh.read(_TEE_PEEK)) is None:
                    continue
            with open_log(path) as fh:
                for line in fh:
                    m = _TEE.match(line) if line[:1] == "[" else None
                    if m is not None and m[2] is not None:
                        found.setdefault(m[1], int(m[2]))
        except OSError:
            continue  # reading it for the log says what is wrong with it
    return found


def ranks_in(path: Path) -> set[int]:
    """The ranks of the ``[rankN]:`` prefixes at line starts in a file (two at most: more do not
    change what the file is, and a big CI log is not read to its end for them)."""
    ranks: set[int] = set()
    try:
        with open_log(path) as fh:
            for line in fh:
                m = _RANK_AT_START.match(line) if line[:1] == "[" else None
                if m is not None:
                    ranks.add(int(m[1]))
                    if len(ranks) > 1:
                        break
    except FileNotFoundError:
        raise InputError(f"{path}: no such log file; give a log file, or - to read standard input") from None
    except PermissionError:
        raise InputError(f"{path}: cannot be read (permission denied)") from None
    return ranks
