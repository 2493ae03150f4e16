"""The wrapped function's parameters behind torch's ``inner``: ``args[2]`` is ``lr``.

torch compiles its own ``inner(*args, **kwargs)`` (torch/_dynamo/external_utils.py) for a compiled
``@torch.no_grad()`` function; ``inner`` passes ``args`` on unchanged, so ``args[i]`` is the wrapped
function's i-th positional parameter. Which function that is comes from where torch says a recompile's
guard was read (``train.py:28 in sgd_momentum``), and only counts when that function's source is at
hand and it is itself compiled (a decorator names ``compile``): a helper it calls is not the wrapped
function, and when it cannot be known ``args[i]`` keeps torch's name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from guarddiag.explain.model import (
    CacheEntry,
    CallablesObject,
    ContentObject,
    FixHint,
    GuardedObject,
    IdentityObject,
    TensorObject,
    TypeObject,
    ValueObject,
)
from guarddiag.ids import CompileId
from guarddiag.model import Cause, FunctionSummary
from guarddiag.sourceinfo import ARGUMENT
from guarddiag.wrapped import renamed_cause, renamed_name, wrapped_parameters

_ARG = re.compile(r"^L\['args'\]\[(?P<i>\d+)\]")


@dataclass(frozen=True)
class NamedArguments:
    """The parameter names of torch's ``inner`` frame's ``args`` in the entries compiled for one function."""

    params: Mapping[int, str]
    entries: frozenset[CompileId]
    every: bool

    def entry(self, e: CacheEntry) -> CacheEntry:
        """The entry with its ``args[i]`` rows named (when it was compiled for that function)."""
        if e.compile_id not in self.entries:
            return e
        return dataclasses.replace(e, objects=tuple(renamed(o, self.params) for o in e.objects))

    def cause(self, c: Cause) -> Cause:
        """A cause with its object named, when its entry was compiled for that function."""
        return renamed_cause(c, self.params) if c.cache_entry in self.entries else c

    def hint(self, h: FixHint) -> FixHint:
        """A hint, named when every entry was compiled for that function (a hint can stand for several causes)."""
        if not self.every:
            return h
        causes = tuple(renamed_cause(c, self.params) for c in h.causes)
        aliased = tuple(renamed_name(n, self.params) for n in h.aliased)
        return dataclasses.replace(h, subject=renamed_name(h.subject, self.params), aliased=aliased, causes=causes)


def named_arguments(f: FunctionSummary, entries: Sequence[CacheEntry], known_files: Iterable[str]) -> NamedArguments:
    """Which entries of ``f`` name ``args[i]`` by the wrapped function's parameters: those with the same
    code behind ``fn`` as an entry whose failing guard was read in that function (one wrapper serves
    every no_grad function and compiled module, and tells them apart only by that code)."""
    function, params, located = wrapped_parameters(f, known_files)
    if function is None or not params:
        return NamedArguments({}, frozenset(), False)
    ours = {code_identity(e.objects) for e in entries if e.compile_id in located} - {()}
    renames = frozenset(e.compile_id for e in entries if code_identity(e.objects) in ours)
    return NamedArguments(params, renames, bool(entries) and len(renames) == len(entries))


def code_identity(objects: Iterable[GuardedObject]) -> tuple[tuple[str, str], ...]:
    """Which callable an entry of the wrapper was compiled for: the ids of the code objects it reaches from
    ``fn`` (one wrapper serves every no_grad function and module; its entries tell them apart by these)."""
    return tuple(
        sorted(
            (s, m.pinned)
            for o in objects
            if isinstance(o, CallablesObject)
            for m in o.members
            for s in m.sources
            if s.startswith("L['fn']") and s.endswith(".__code__")
        )
    )


def renamed(o: GuardedObject, params: Mapping[int, str]) -> GuardedObject:
    """A row reached from ``args[i]`` named by the parameter: ``args[2]`` -> ``lr``, ``args[0][1]`` -> ``params[1]``."""
    if not params or not isinstance(o, TensorObject | ValueObject | IdentityObject | TypeObject | ContentObject):
        return o
    m = _ARG.match(o.sources[0]) if o.sources else None
    if m is None or int(m["i"]) not in params:
        return o
    name = params[int(m["i"])]
    rest = o.name.partition("]")[2]
    return dataclasses.replace(o, name=name + rest, root=name, role=ARGUMENT)
