"""Events: what the parser recognized in the log, before any counting or classification.

An event's ``compile_id`` is parsed where the parser cut it from the line, in its process and cache
generation (``rank1:0~1/2``); ``process`` is the process of its line (``rank1``, or the main one), also
for a line that printed no compile id (torch 2.0, a paste's message).
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.ids import MAIN_PROCESS, CompileId, Process
from guarddiag.model import Guard


@dataclass(frozen=True, slots=True)
class FrameNamed:
    """A log line that names the code object behind a compile id (``start tracing f x.py:9``)."""

    compile_id: CompileId | None
    name: str
    file: str
    line: int | None
    process: Process = MAIN_PROCESS


@dataclass(frozen=True, slots=True)
class CompileSeen:
    """A line carrying compile id ``frame/n``: compile n of that frame happened."""

    compile_id: CompileId


@dataclass(frozen=True, slots=True)
class StackFrame:
    """One frame of the ``User stack trace:`` torch >= 2.11 prints under a guard failure: where the guard
    was installed while tracing, outermost first (``file`` as torch names it, ``code`` its line)."""

    file: str
    line: int
    function: str
    code: str = ""


@dataclass(frozen=True, slots=True)
class GuardFailure:
    """One reason a cache entry rejected a call, as torch printed it, and the user stack torch printed under it."""

    cache_entry: CompileId | None
    text: str
    stack: tuple[StackFrame, ...] = ()


@dataclass(frozen=True, slots=True)
class RecompileAnnounced:
    """A ``Recompiling function ...`` block with every failing guard."""

    compile_id: CompileId | None
    name: str
    file: str
    line: int | None
    failures: tuple[GuardFailure, ...]
    process: Process = MAIN_PROCESS


@dataclass(frozen=True, slots=True)
class GuardListing:
    """The guards installed by one compile (``GUARDS:`` block, tree or flat).

    A counting parser leaves tree guards unparsed in ``raw`` as (kind, rest of line): they are
    read only when an unannounced recompile needs them. :meth:`all_guards` reads them.
    """

    compile_id: CompileId | None
    guards: tuple[Guard, ...]
    raw: tuple[tuple[str, str], ...] = ()
    process: Process = MAIN_PROCESS
    # torch's ``Guard eval latency = X us`` under the listing (torch >= 2.6; a trace's ``Guard latency``):
    # one check of the whole tree, measured once at compile time. None: the listing gave none.
    latency_us: float | None = None
    # Leaf guards of a tree listing by the source of the manager each sits under ("": the root, guards on
    # the frame as a whole), every leaf whether or not ``guards``/``raw`` keep it. Empty for a flat listing.
    owners: tuple[tuple[str, int], ...] = ()

    def all_guards(self) -> tuple[Guard, ...]:
        from guarddiag.logparse.guards import guard_from_raw

        return self.guards + tuple(guard_from_raw(kind, rest) for kind, rest in self.raw)


@dataclass(frozen=True, slots=True)
class LimitWarning:
    """``torch._dynamo hit config.recompile_limit (8)`` and the lines that follow it."""

    compile_id: CompileId | None
    limit: str
    value: int | None
    name: str
    file: str
    line: int | None
    last_reason: str
    process: Process = MAIN_PROCESS


@dataclass(frozen=True, slots=True)
class GraphBreakSeen:
    """A graph break message; ``channel``: torch's record of it on the ``graph_breaks`` log channel
    (torch 2.1+), not a warning that names a graph break elsewhere (``Tensor.item()``'s)."""

    compile_id: CompileId | None
    location: str
    reason: str
    channel: bool = False
    process: Process = MAIN_PROCESS


@dataclass(frozen=True, slots=True)
class SymbolCreated:
    """``create_symbol s27 = 12 for L['x'].size()[1] ...``: a size (or number) of the compile made symbolic."""

    compile_id: CompileId | None
    symbol: str
    source: str
    # The size the call had (``12``), which the compile's guards were decided at; "" where torch printed none.
    value: str = ""
    process: Process = MAIN_PROCESS


@dataclass(frozen=True, slots=True)
class SizeGuardAdded:
    """``eval Eq(s27, s23) [guard added] return x + b  # model.py:5 in f (...)``: a symbolic-size guard the compile
    added, over its symbols, with the user's line that added it (where torch names one)."""

    compile_id: CompileId | None
    expr: str
    location: str
    code: str
    process: Process = MAIN_PROCESS


@dataclass(frozen=True, slots=True)
class StanceRefusalSeen:
    """The RuntimeError of a call ``fail_on_recompile`` refused, as the script printed it into the log
    (torch 2.7+ name the function's file and name, and give a reason per cache entry)."""

    name: str
    file: str
    reasons: tuple[str, ...]


Event = (
    FrameNamed | CompileSeen | RecompileAnnounced | GuardListing | LimitWarning | GraphBreakSeen | SymbolCreated | SizeGuardAdded
    | StanceRefusalSeen
)
