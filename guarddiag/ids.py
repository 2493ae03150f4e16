"""Compile ids, processes and function identity: parsed once here, used everywhere.

torch prints a compile id as ``[frame/compile]`` with an optional attempt (``[0/1_2]``), or
``[!ca/frame/compile]`` for compiled autograd. guarddiag's ids add what torch leaves implicit:
the process (``rank1:0/3`` for a torchrun worker of global rank 1, named by the environment its
launcher gave it or by a ``[rank1]:`` line prefix; ``child1:0/3`` for another process the script
started) and the cache generation (``0~1/0``: frame 0 after ``torch._dynamo.reset()``).
A frame id is the id without its compile number: ``rank1:0``. The model holds both parsed
(:class:`CompileId`, :class:`FrameId`); only the record (``store``) and ``render/`` write them as text.

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
==================  ==================================================================================
"""

from __future__ import annotations

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
# A process other than the main one (the table in the module docstring).
_PROCESS = re.compile(rf"(?:{RECORD_LABEL}/)?(?:rank|local|log|child)\d+|{RECORD_LABEL}/main")
_RANK = re.compile(rf"(?:(?P<label>{RECORD_LABEL})/)?rank(?P<rank>\d+)")


@dataclass(frozen=True, slots=True, order=True)
class CompileId:
    """A parsed compile id: frame (within its process), compile number within the frame, attempt, process."""

    frame: str
    number: int
    attempt: int = 0
    process: str = ""

    @classmethod
    def parse(cls, text: str | None, process: str = "") -> CompileId | None:
        """``0/1`` -> (0, 1); ``0/1_2`` -> attempt 2; ``!0/3/1`` -> frame ``!0/3``; ``rank1:0/1`` ->
        process ``rank1``; ``?f@/x.py:3/1`` -> frame ``?f@/x.py:3`` (a frame guarddiag named); ``process``:
        the process of an id that names none (the rank of its log line). None for a frame id (``0``), a
        bare process (``rank1:``) or nothing."""
        if not text:
            return None
        named = process_of(text)
        bare = text[len(named) + 1 :] if named else text
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

    def in_process(self, process: str) -> CompileId:
        """The same compile seen from process ``process`` (a process the script started, ``child1``): a
        process this id already names stays in its frame (``rank1:0/3`` -> ``child1:rank1:0/3``)."""
        return CompileId(with_process(self.process, self.frame), self.number, self.attempt, process)

    def __str__(self) -> str:
        return with_process(self.process, self.compile_key + (f"_{self.attempt}" if self.attempt else ""))


@dataclass(frozen=True, slots=True)
class FrameId:
    """A compiled frame of a process: torch's frame number (``0``, ``!0/3``, ``0~1`` after a reset) or
    a frame guarddiag names where the log gives no id (``?forward@model.py:12``, ``?forward``), and
    its process (``rank1:0``). No frame: the process alone (``rank1:``), where a rank's line names no
    compile."""

    frame: str
    process: str = ""

    @classmethod
    def parse(cls, text: str) -> FrameId:
        """``rank1:0`` -> frame ``0`` of ``rank1``; ``rank1:`` -> the bare process; ``?f@C:\\x.py:3`` -> a
        frame of the main process (what precedes ``:`` is no process label)."""
        process = process_of(text)
        return cls(text[len(process) + 1 :] if process else text, process)

    def compile(self, number: int) -> CompileId:
        """Compile ``number`` of this frame: ``rank1:0`` and 3 -> ``rank1:0/3``."""
        return CompileId(self.frame, number, 0, self.process)

    def in_process(self, process: str) -> FrameId:
        """The same frame seen from process ``process`` (see :meth:`CompileId.in_process`)."""
        return FrameId(str(self), process)

    @property
    def generation(self) -> int:
        """Its cache generation: ``0~2`` -> 2, ``0`` -> 0 (before any ``torch._dynamo.reset()``)."""
        _, sep, generation = self.frame.rpartition("~")
        return int(generation) if sep and generation.isdigit() else 0

    def __str__(self) -> str:
        return with_process(self.process, self.frame)


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


def with_process(process: str, text: str) -> str:
    """A frame or compile id of another process: ``rank1`` and ``0/1`` -> ``rank1:0/1``."""
    return f"{process}:{text}" if process else text


def rank_process(rank: int) -> str:
    """The process of a torchrun job's global rank ``rank``: ``rank1``."""
    return f"rank{rank}"


def child_process(number: int) -> str:
    """The ``number``-th process (from 1) a script started that is no rank of a job: ``child1``."""
    return f"child{number}"


def ranked(rank: int | None, compile_id: str | None) -> str | None:
    """A compile id read on a line with torchrun's ``[rank1]:`` prefix: ``rank1:0/1`` (``rank1:`` when
    the line has none); compile ids of different ranks are different compiles."""
    return compile_id if rank is None else with_process(rank_process(rank), compile_id or "")


def process_of(text: str | None) -> str:
    """The process a frame or compile id belongs to when not the main one: ``rank1:0/3`` and
    ``rank1:`` -> ``rank1``, ``child2:0`` -> ``child2``, ``py311/rank0:0/1`` -> ``py311/rank0``;
    ``""`` otherwise (also for ``?forward@C:\\x.py``, a frame named from a Windows path)."""
    head, sep, _ = (text or "").partition(":")
    return head if sep and _PROCESS.fullmatch(head) else ""


def is_process(label: str) -> bool:
    """Whether ``label`` is a process label of the grammar above (``""``, the main process, is not)."""
    return _PROCESS.fullmatch(label) is not None


def rank_of(process: str) -> int | None:
    """The global rank a process label names: ``rank1`` and ``py311/rank1`` -> 1; None for any other."""
    m = _RANK.fullmatch(process)
    return int(m["rank"]) if m else None


def job_rank(process: str) -> tuple[str, int] | None:
    """The job (a merged record's label, ``""`` for the run's own) and global rank a process label
    names: ``rank1`` -> ("", 1), ``py311/rank1`` -> ("py311", 1); None for any other."""
    m = _RANK.fullmatch(process)
    return (m["label"] or "", int(m["rank"])) if m else None


def in_record(label: str, process: str) -> str:
    """A process of record ``label`` in a merge: ``rank1`` -> ``L/rank1``, the main process -> ``L/main``."""
    return f"{label}/{process or 'main'}"


def in_generation(compile_id: str, generation: int) -> str:
    """``0/1_2`` in cache generation 1 (after one ``torch._dynamo.reset()``) -> ``0~1/1_2``, a frame of its own."""
    if not generation or "/" not in compile_id:
        return compile_id
    frame, _, rest = compile_id.rpartition("/")
    return f"{frame}~{generation}/{rest}"


class FunctionKey(NamedTuple):
    """Who a compiled function is across runs: process, name, file and first line (never frame or object ids)."""

    process: str
    name: str
    file: str
    line: int | None

    def __str__(self) -> str:
        return f"{with_process(self.process, self.name)}@{self.file}:{self.line}"
