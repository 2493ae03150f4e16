"""Line framing: strip whatever prefix a torch log line carries, keep what it says.

Three prefix styles exist across torch 2.0 ... 2.15 (see docs/log-formats.md):

* glog style (torch >= 2.2):
  ``V1130 07:22:30.181000 2270 torch/_dynamo/guards.py:5396] [1/1] [__recompiles] msg``
* bracketed date style (torch 2.0/2.1):
  ``[2023-11-06 14:54:08,549] [0/0] torch._dynamo.guards.__guards: [DEBUG] msg``
* Python's default ``logging.basicConfig`` style: ``DEBUG:torch._dynamo.guards.__guards:msg``

Any of them may sit behind a ``[rank0]:`` prefix (torch.distributed), itself behind torchrun's
``[default0]:`` (``--tee``: role and local rank), which is dropped. The compile id is
``[frame/compile]``, optionally with an attempt ``_n`` suffix, or a compiled-autograd
form ``[!ca/frame/compile]`` (:mod:`guarddiag.ids` reads them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guarddiag.ids import COMPILE_ID, RANK_PREFIX

# Pieces of the prefixes, also for the paste reader (guarddiag.logparse.paste), which finds them
# mid-line or cut short. Unnamed: a pattern may use one twice.
GLOG_LEVEL = r"[VDIWEC]"
LEVEL_NAMES = r"DEBUG|INFO|WARNING|ERROR|CRITICAL"  # logging's, in the bracketed and basicConfig styles
DAY = r"\d{4}-\d\d-\d\d"
CLOCK = r"\d\d:\d\d:\d\d"
GLOG_TIME = rf"\d{{4}} {CLOCK}\.\d+"  # MMDD hh:mm:ss.micros, after the level letter
BRACKET_DATE = rf"\[{DAY} {CLOCK},\d+\]"
ARTIFACT = r"__\w+"
# torchrun's --tee prefix, role and local rank: ``[default0]:`` (never ``[rank0]:``).
TEE_PREFIX = r"\[(?!rank\d)[A-Za-z_][\w-]*?\d+\]:"
# A worker process's tag that Ray and vLLM put before every line a worker prints: ``(VllmWorker rank=0
# pid=293) ``, ``(RayWorkerWrapper pid=1234, ip=10.0.0.1) ``; told by its ``pid=``.
WORKER_PREFIX = r"\([A-Za-z_][\w.]*[^()\n]*?\bpid=\d+[^()\n]*\) "
# What may stand before a torch prefix: a worker's tag, torchrun's and torch.distributed's prefixes.
LEADING_PREFIXES = rf"(?:{WORKER_PREFIX})?(?:{TEE_PREFIX})?(?:{RANK_PREFIX})?"
# A glog or bracketed-date prefix itself, after what may stand before it.
PREFIX_TIME = rf"(?:{GLOG_LEVEL}{GLOG_TIME} |{BRACKET_DATE} )"
# Where a glog or bracketed-date prefix starts (with its rank).
FRAME_START = rf"{LEADING_PREFIXES}{PREFIX_TIME}"

_RANK = rf"(?:{WORKER_PREFIX})?(?:{TEE_PREFIX})?(?:\[rank(?P<rank>\d+)\]:\s?)?"
_CID = rf"(?:\[(?P<cid>{COMPILE_ID})\]\s?)?"
_ART = rf"(?:\[(?P<art>{ARTIFACT})\]\s?)?"

_GLOG = re.compile(
    _RANK
    + rf"(?P<level>{GLOG_LEVEL}){GLOG_TIME} +\d+ (?P<origin>[^\]]+?:\d+)\] "
    + _CID
    + _ART
    + r"(?P<body>.*)$"
)
_BRACKET = re.compile(
    _RANK
    + BRACKET_DATE
    + " "
    + _CID
    + r"(?P<origin>torch[\w.]*): \[(?P<level>[A-Z]+)\] ?(?P<body>.*)$"
)
_PYDEFAULT = re.compile(
    _RANK + rf"(?P<level>{LEVEL_NAMES}):(?P<origin>torch[\w.]*):" + _CID + r"(?P<body>.*)$"
)
_RANK_ONLY = re.compile(rf"(?:{WORKER_PREFIX})?(?:{TEE_PREFIX})?\[rank(?P<rank>\d+)\]:\s?(?P<body>.*)$")


@dataclass(frozen=True, slots=True)
class Framed:
    """A torch log line with its prefix taken apart; ``body`` is the message text."""

    level: str
    origin: str
    compile_id: str | None
    artifact: str | None
    rank: int | None
    body: str


def _artifact_from_logger(origin: str) -> str | None:
    last = origin.rsplit(".", 1)[-1]
    return last if last.startswith("__") else None


def frame(line: str) -> Framed | None:
    """Frame one line (without its newline); None when it is not a torch log line."""
    if not line:
        return None
    first = line[0]
    if first in "[(VDIWEC":
        m = _GLOG.match(line)
        if m is not None:
            return _framed(m, m["art"])
        m = _BRACKET.match(line)
        if m is not None:
            return _framed(m, _artifact_from_logger(m["origin"]))
    m = _PYDEFAULT.match(line)
    if m is not None:
        return _framed(m, _artifact_from_logger(m["origin"]))
    return None


def strip_rank(line: str) -> tuple[int | None, str]:
    """Split a ``[rankN]:`` prefix off a line that is not itself a framed torch line."""
    m = _RANK_ONLY.match(line)
    if m is None:
        return None, line
    return int(m["rank"]), m["body"]


def _framed(m: re.Match[str], artifact: str | None) -> Framed:
    rank = m["rank"]
    return Framed(
        level=m["level"][0],
        origin=m["origin"],
        compile_id=m["cid"],
        artifact=artifact,
        rank=int(rank) if rank is not None else None,
        body=m["body"],
    )

