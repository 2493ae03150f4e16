"""The processes of one run, each read from its own log in the run folder and named.

The script's own process writes ``torch.log``; every Python process it starts writes
``torch.child-<pid>.log`` (see ``_site``). A torchrun worker is named by its global rank
(``rank1``), from ``torch.child-<pid>.rank.json`` that it wrote from the environment its launcher
gave it, or else from the ``[rankN]:`` prefix torch puts on its log lines once torch.distributed
is initialised; any other process is ``child1``, ``child2``, ... in start (pid) order.

One log file is one process: the ``[rankN]:`` prefix on its lines names that process, it does not
split it (lines before and after ``init_process_group`` are the same compiles), so it is stripped
before parsing and the whole file gets the process's name.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from guarddiag.child._site import _guarddiag_process as _process
from guarddiag.ids import MAIN_PROCESS, Process
from guarddiag.ledger import CompileRecord, RefusalRecord, compiles_in, read_ledger, read_stances
from guarddiag.logparse.framing import strip_rank
from guarddiag.merge import add_stats, in_process
from guarddiag.model import FunctionSummary, JobProcess, ParseStats, StanceUse
from guarddiag.pipeline import LogReader

CHILD_GLOB = "torch.child-*.log"


@dataclass(frozen=True)
class ProcessLog:
    """One process's log in the run folder: its name in reports (the main process: the script's own)
    and, for a rank, what its launcher told it (:class:`JobProcess`, named by its ``process``)."""

    name: Process
    path: Path
    ledger: Path
    rank: JobProcess | None = None


@dataclass(frozen=True)
class RunLogs:
    """Everything read from a run folder's logs."""

    functions: tuple[FunctionSummary, ...]
    stats: ParseStats
    # Compiles torch recorded in the script's own process (None: not known).
    torch_compiles: int | None
    # The processes the script started, ranks first (empty unless one of them is a rank: a job's
    # processes), each with the compiles torch recorded in it.
    processes: tuple[JobProcess, ...]
    # Compiler stances that can refuse to recompile, as each process used them.
    stances: tuple[StanceUse, ...] = ()


def read_run_logs(run_dir: Path, main_log: Path, main_ledger: Path) -> RunLogs:
    """The main process's log, then each other process's, every function tagged with its process."""
    ledger = read_ledger(main_ledger)
    stances = read_stances(main_ledger)
    functions, stats = _read_log(main_log, ledger or (), set(), stances.refusals)
    uses = [StanceUse(stance, counted) for stance, counted in stances.uses]
    parsed = []
    for path in _children(run_dir):
        seen: set[int] = set()
        child_ledger = read_ledger(_ledger_of(path))
        child_stances = read_stances(_ledger_of(path))
        found, read = _read_log(path, child_ledger or (), seen, child_stances.refusals)
        stats = add_stats(stats, read)
        parsed.append((path, _env_rank(path) or _prefix_rank(seen), (found, compiles_in(child_ledger), child_stances.uses)))
    processes = []
    named = zip(_named(parsed), (f for _, _, f in parsed), strict=True)
    for process, (found, counted, used) in sorted(named, key=lambda pf: _order(pf[0])):
        functions += tuple(in_process(f, process.name) for f in found)
        uses += [StanceUse(stance, c, process.name) for stance, c in used]
        known = process.rank or JobProcess(process.name, None, None, "started", ())
        processes.append(replace(known, logs=(str(process.path),), torch_compiles=counted))
    if not any(p.rank is not None for p in processes):
        processes = []
    return RunLogs(functions, stats, compiles_in(ledger), tuple(processes), tuple(uses))


def process_logs(run_dir: Path) -> list[ProcessLog]:
    """The processes the script started, named: ranks by rank, then other children by pid."""
    found = []
    for path in _children(run_dir):
        seen: set[int] = set()
        if _env_rank(path) is None:
            with contextlib.suppress(OSError), path.open(encoding="utf-8", errors="replace") as fh:
                for _ in _own_lines(fh, seen):
                    pass
        found.append((path, _env_rank(path) or _prefix_rank(seen), None))
    return sorted(_named(found), key=_order)


def _order(process: ProcessLog) -> tuple[bool, int]:
    """Ranks by rank, then the other processes in start order (a sort keeps their order)."""
    is_rank = process.rank is not None and process.name == Process.of_rank(process.rank.rank)
    return (not is_rank, process.rank.rank if is_rank and process.rank else 0)


def _children(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob(CHILD_GLOB), key=lambda p: _pid(p) or 0)


def _named(found: list[tuple[Path, JobProcess | None, object]]) -> list[ProcessLog]:
    """A name for each process (in the order given): ``rankN`` for a rank, ``childN`` for the others
    (numbered among themselves). A rank seen in several processes (torchrun restarted its workers,
    ``--max-restarts``) names the one of the last restart, whose run the job's outcome is; an
    earlier one is a child, its rank and restart kept in its info."""
    last: dict[int, int] = {}
    for i, (_, info, _) in enumerate(found):
        if info is not None and (info.rank not in last or (info.restart or 0) >= (found[last[info.rank]][1].restart or 0)):
            last[info.rank] = i
    out = []
    number = 0
    for i, (path, info, _) in enumerate(found):
        if info is not None and last[info.rank] == i:
            name = Process.of_rank(info.rank)
        else:
            number += 1
            name = Process.of_child(number)
        out.append(ProcessLog(name, path, _ledger_of(path), replace(info, process=name) if info else None))
    return out


def _read_log(
    path: Path, ledger: Iterable[CompileRecord], seen: set[int], refusals: Iterable[RefusalRecord] = ()
) -> tuple[tuple[FunctionSummary, ...], ParseStats]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        return LogReader(ledger=tuple(ledger), refusals=tuple(refusals)).read(_own_lines(fh, seen)).result()


def _own_lines(lines: Iterable[str], seen: set[int] | None = None) -> Iterator[str]:
    """The lines of one process's log without torch's ``[rankN]:`` prefix (the ranks go to ``seen``)."""
    for line in lines:
        if line.startswith("[rank"):
            rank, body = strip_rank(line)
            if rank is not None:
                line = body
                if seen is not None:
                    seen.add(rank)
        yield line


def _env_rank(path: Path) -> JobProcess | None:
    """What the launcher told the process that wrote ``path`` (its ``.rank.json``); None: no rank."""
    try:
        fact = json.loads(Path(_process.rank_path(str(path.parent), _pid(path) or 0)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rank = _int(fact.get("RANK")) if isinstance(fact, dict) else None
    if rank is None:
        return None
    return JobProcess(
        process=MAIN_PROCESS,
        rank=rank,
        local_rank=_int(fact.get("LOCAL_RANK")),
        named_by="environment",
        logs=(),
        node_rank=_int(fact.get("GROUP_RANK")),
        world_size=_int(fact.get("WORLD_SIZE")),
        host=str(fact.get("host") or ""),
        run_id=str(fact.get("TORCHELASTIC_RUN_ID") or ""),
        restart=_int(fact.get("TORCHELASTIC_RESTART_COUNT")),
    )


def _prefix_rank(seen: set[int]) -> JobProcess | None:
    """The rank of a process started without RANK (``torch.multiprocessing.spawn``), from the one rank
    its log lines name once torch.distributed is initialised; None when they name none or several."""
    return JobProcess(process=MAIN_PROCESS, rank=next(iter(seen)), local_rank=None, named_by="prefix", logs=()) if len(seen) == 1 else None


def _ledger_of(log: Path) -> Path:
    return log.with_name(f"{log.stem}.compiles.jsonl")


def _pid(path: Path) -> int | None:
    return _int(path.name[len("torch.child-") : -len(".log")])


def _int(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None
