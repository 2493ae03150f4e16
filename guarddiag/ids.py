"""Compile ids, processes and function identity: parsed once here, used everywhere.

torch prints a compile id as ``[frame/compile]`` with an optional attempt (``[0/1_2]``), or
``[!ca/frame/compile]`` for compiled autograd. guarddiag's ids add what torch leaves implicit:
the process (``rank1:0/3`` for a torchrun worker of global rank 1, named by the environment its
launcher gave it or by a ``[rank1]:`` line prefix; ``child1:0/3`` for another process the script
started) and the cache generation (``0~1/0``: frame 0 after ``torch._dynamo.reset()``).
A frame id is the id without its compile number: ``rank1:0``. The model holds them parsed
(:class:`CompileId`, :class:`FrameId`, their :class:`Process`); only the files guarddiag keeps (the
record, ``store``; a baseline; compare's verdicts) and ``render/`` write them as text.

Process labels (the part before ``:``; the main process has none):

==================  ==================================================================================
``rank1``           global rank 1 of a torchrun job (a ``[rank1]:`` line prefix)
``local1``          a torchrun worker whose global rank its log does not show: local rank 1 (the
                    ``<local rank>`` directory of torchrun's ``--log-dir``)
``log2``            a per-rank log file that shows no rank: the 2nd file on the command line
``child1``          a process the script started (start order)
``L/rank1``         any of these (``L/main``: the main process) from record ``L`` of a merge
                    (``guarddiag merge``): a node whose workers' ranks are not known, or one job of a
                    CI matrix, whose rank numbers other jobs reuse
``child1:rank1``    a line with a ``[rank1]:`` prefix in the log of ``child1`` (any of these before the
                    second ``:``): the process of the log and the rank its line named
==================  ==================================================================================
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

# A compile id as a log line's prefix prints it (without its brackets): ``0/1``, ``0/1_2``, ``!0/3/1``.
COMPILE_ID = r"!?\d+(?:/\d+)*(?:_\d+)?"
# A cache entry as failure texts name it, the compile id whose guards failed: ``0/1``, ``0/1_1``, ``!0/3/1``.
CACHE_ENTRY = r"!?\d+(?:/\d+)+(?:_\d+)?"
# torch.distributed's prefix on each line of a rank once init_process_group ran: ``[rank1]:``.
RANK_PREFIX = r"\[rank\d+\]:"
_RANK_PREFIX = re.compile(r"\[rank(\d+)\]:")
# A record's label in a merge: a file name's stem, or the LABEL of LABEL=PATH.
RECORD_LABEL = r"[A-Za-z0-9_.+-]+"
# One process label of the table above: ``rank1``, ``L/rank1``, ``L/main``.
_LABEL = re.compile(
    rf"(?:(?P<record>{RECORD_LABEL})/)?(?P<kind>rank|local|log|child)(?P<number>\d+)|(?P<main_of>{RECORD_LABEL})/main"
)
# How many labels an id's process has at most: a process's own and the rank its log's line named
# (``child1:rank1``); what follows is the frame's, as a hand-edited record may write it.
_NESTING = 2
# The kinds of process of the table above; the main process has no number.
MAIN, RANK, LOCAL, LOG, CHILD = "main", "rank", "local", "log", "child"


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class Process:
    """A process of a run, parsed: its ``kind`` (:data:`RANK`, :data:`LOCAL`, :data:`LOG`, :data:`CHILD` or
    :data:`MAIN`), its ``number`` (None for the main process), the ``record`` it came from in a merge
    (``L`` of ``L/rank1``; ``M/L`` when a merged record is merged again) and ``inner``: the process a
    ``[rank1]:`` prefix named on a line of this process's log (``child1:rank1``). False for the main
    process of a run, as its empty label was; ordered by label, then number (``rank2`` before ``rank10``)."""

    kind: str = MAIN
    number: int | None = None
    record: str = ""
    inner: Process | None = None

    @classmethod
    def parse(cls, text: str) -> Process:
        """``rank1`` -> rank 1; ``py311/rank0`` -> rank 0 of record ``py311``; ``child1:rank1`` -> rank 1 in
        child 1's log; ``""`` -> the main process. Raises ValueError for any other text."""
        process, rest = cls.split(text + ":") if text else (MAIN_PROCESS, "")
        if rest:
            raise ValueError(f"not a process label (rank1, child1, L/rank1): {text!r}")
        return process

    @classmethod
    def split(cls, text: str) -> tuple[Process, str]:
        """The process labels a frame or compile id begins with, and the rest: ``rank1:0/3`` -> (rank 1,
        ``0/3``), ``rank1:`` -> (rank 1, ``""``), ``child1:rank1:0`` -> (rank 1 in child 1, ``0``); ``0/3``
        and ``?forward@C:\\x.py:3`` (no label before the ``:``) -> (the main process, the text as it is)."""
        labels = []
        while len(labels) < _NESTING:
            head, sep, rest = text.partition(":")
            m = _LABEL.fullmatch(head) if sep else None
            if m is None:
                break
            labels.append(m)
            text = rest
        process = None
        for m in reversed(labels):  # the innermost last: each label holds the ones after it
            if m["main_of"] is not None:
                process = cls(MAIN, None, m["main_of"], process)
            else:
                process = cls(m["kind"], int(m["number"]), m["record"] or "", process)
        return process or MAIN_PROCESS, text

    @classmethod
    def of_rank(cls, rank: int) -> Process:
        """The process of a torchrun job's global rank ``rank``: ``rank1``."""
        return cls(RANK, rank)

    @classmethod
    def of_child(cls, number: int) -> Process:
        """The ``number``-th process (from 1) a script started that is no rank of a job: ``child1``."""
        return cls(CHILD, number)

    @property
    def rank(self) -> int | None:
        """The global rank it names: ``rank1`` and ``py311/rank1`` -> 1; None for any other process."""
        job = self.job_rank
        return None if job is None else job[1]

    @property
    def job_rank(self) -> tuple[str, int] | None:
        """The job (a merged record's label, ``""`` for the run's own) and global rank it names: ``rank1`` ->
        ("", 1), ``py311/rank1`` -> ("py311", 1); None for any other process."""
        if self.kind != RANK or self.number is None or self.inner is not None or "/" in self.record:
            return None
        return self.record, self.number

    @property
    def outer(self) -> Process:
        """The process whose log it is (``child1`` of ``child1:rank1``): a function's process."""
        return self if self.inner is None else Process(self.kind, self.number, self.record)

    def containing(self, inner: Process) -> Process:
        """This process with ``inner`` as the process its log's lines named: ``child1`` and ``rank1`` ->
        ``child1:rank1``; the main process adds nothing (``child1`` and the main process -> ``child1``)."""
        return Process(self.kind, self.number, self.record, inner or None)

    def in_record(self, label: str) -> Process:
        """It in record ``label`` of a merge: ``rank1`` -> ``L/rank1``, the main process -> ``L/main``."""
        return Process(self.kind, self.number, f"{label}/{self.record}" if self.record else label, self.inner)

    def _head(self) -> str:
        """Its own label without the number: ``rank`` of ``rank1``, ``L/rank``, ``L/main``; ``""`` (the main process)."""
        kind = self.kind if self.number is not None else MAIN if self.record else ""
        return f"{self.record}/{kind}" if self.record else kind

    def _key(self) -> tuple:
        """The order of processes: by label without its number, then number (the main process first)."""
        return (self._head(), -1 if self.number is None else self.number, () if self.inner is None else self.inner._key())

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Process):
            return NotImplemented
        return self._key() < other._key()

    def __bool__(self) -> bool:
        return self.number is not None or bool(self.record) or self.inner is not None

    def __str__(self) -> str:
        label = self._head() + ("" if self.number is None else str(self.number))
        return label if self.inner is None else f"{label}:{self.inner}"


# The script's own process (its label is empty: ids of the main process name none).
MAIN_PROCESS = Process()


@dataclass(frozen=True, slots=True, order=True)
class CompileId:
    """A parsed compile id: frame (within its process), compile number within the frame, attempt, process."""

    frame: str
    number: int
    attempt: int = 0
    process: Process = MAIN_PROCESS

    @classmethod
    def parse(cls, text: str | None, process: Process = MAIN_PROCESS) -> CompileId | None:
        """``0/1`` -> (0, 1); ``0/1_2`` -> attempt 2; ``!0/3/1`` -> frame ``!0/3``; ``rank1:0/1`` ->
        process ``rank1``; ``?f@/x.py:3/1`` -> frame ``?f@/x.py:3`` (a frame guarddiag named); ``process``:
        the process of an id that names none (the rank of its log line). None for a frame id (``0``), a
        bare process (``rank1:``) or nothing."""
        if not text:
            return None
        named, bare = Process.split(text)
        frame, slash, tail = bare.rpartition("/")
        number, _, attempt = tail.partition("_")
        if not slash:
            return None
        try:
            return cls(frame, int(number), int(attempt) if attempt else 0, named or process)
        except ValueError:
            return None

    @property
    def first_attempt(self) -> CompileId:
        """This compile without its attempt number: ``0/1_2`` -> ``0/1``."""
        return CompileId(self.frame, self.number, 0, self.process) if self.attempt else self

    @property
    def frame_id(self) -> FrameId:
        """The frame with its process: ``rank1:0``."""
        return FrameId(self.frame, self.process)

    @property
    def compile_key(self) -> str:
        """``frame/number``, without process or attempt: one compile whatever its attempts."""
        return f"{self.frame}/{self.number}"

    def in_process(self, process: Process) -> CompileId:
        """The same compile seen from process ``process`` (a process the script started, ``child1``): a
        process this id already names is the one its log's lines named (``rank1:0/3`` -> ``child1:rank1:0/3``)."""
        return CompileId(self.frame, self.number, self.attempt, process.containing(self.process))

    def in_generation(self, generation: int) -> CompileId:
        """This compile in cache generation ``generation`` (after that many ``torch._dynamo.reset()``), a frame
        of its own: ``0/1_2`` in generation 1 -> ``0~1/1_2``, ``!0/3/1`` in 2 -> ``!0/3~2/1``."""
        return CompileId(f"{self.frame}~{generation}", self.number, self.attempt, self.process) if generation else self

    def __str__(self) -> str:
        return _with_process(self.process, self.compile_key + (f"_{self.attempt}" if self.attempt else ""))


@dataclass(frozen=True, slots=True)
class FrameId:
    """A compiled frame of a process: torch's frame number (``0``, ``!0/3``, ``0~1`` after a reset) or
    a frame guarddiag names where the log gives no id (``?forward@model.py:12``, ``?forward``), and
    its process (``rank1:0``). No frame: the process alone (``rank1:``), where a rank's line names no
    compile."""

    frame: str
    process: Process = MAIN_PROCESS

    @classmethod
    def parse(cls, text: str) -> FrameId:
        """``rank1:0`` -> frame ``0`` of ``rank1``; ``rank1:`` -> the bare process; ``?f@C:\\x.py:3`` -> a
        frame of the main process (what precedes ``:`` is no process label)."""
        process, frame = Process.split(text)
        return cls(frame, process)

    def compile(self, number: int) -> CompileId:
        """Compile ``number`` of this frame: ``rank1:0`` and 3 -> ``rank1:0/3``."""
        return CompileId(self.frame, number, 0, self.process)

    def in_process(self, process: Process) -> FrameId:
        """The same frame seen from process ``process`` (see :meth:`CompileId.in_process`)."""
        return FrameId(self.frame, process.containing(self.process))

    @property
    def generation(self) -> int:
        """Its cache generation: ``0~2`` -> 2, ``0`` -> 0 (before any ``torch._dynamo.reset()``)."""
        _, sep, generation = self.frame.rpartition("~")
        return int(generation) if sep and generation.isdigit() else 0

    def __str__(self) -> str:
        return _with_process(self.process, self.frame)


def parse_place(text: str | None) -> CompileId | FrameId | None:
    """Where a limit hit or graph break was, as a record writes it: a compile id (``rank1:0/3``), a bare
    process (``rank1:``, a rank's line that named no compile), None for none."""
    if text is None:
        return None
    return CompileId.parse(text) or FrameId.parse(text)


def place_text(place: CompileId | FrameId | None) -> str | None:
    """A compile id or frame id as records and reports write it (:func:`parse_place` reads it back)."""
    return None if place is None else str(place)


def rank_prefix(rank: int) -> str:
    """torch.distributed's prefix on the lines of global rank ``rank``: ``[rank1]:``."""
    return f"[rank{rank}]:"


def split_rank(line: str) -> tuple[int | None, str]:
    """``[rank1]:V1203 ...`` -> (1, ``V1203 ...``), what follows the prefix kept as is; (None, line) without one."""
    m = _RANK_PREFIX.match(line)
    return (int(m[1]), line[m.end() :]) if m else (None, line)


def _with_process(process: Process, text: str) -> str:
    """A frame or compile id of another process: ``rank1`` and ``0/1`` -> ``rank1:0/1``."""
    return f"{process}:{text}" if process else text


class FunctionKey(NamedTuple):
    """Who a compiled function is across runs: process, name, file and first line (never frame or object ids)."""

    process: Process
    name: str
    file: str
    line: int | None

    def __str__(self) -> str:
        return f"{_with_process(self.process, self.name)}@{self.file}:{self.line}"
