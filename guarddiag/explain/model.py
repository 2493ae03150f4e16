"""The guard model as facts: what each cache entry of a compiled function checks, and how.

No sentences here: :mod:`guarddiag.render.explain_words` says each fact in the user's words.
An object is named by its source in user terms (``m.lin.weight``) and the role of its root
name (argument, global, closure variable...); ``pinned`` is what the entry pinned (ids,
values, sizes), compared across entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from guarddiag.ids import CompileId
from guarddiag.model import Cause, FunctionSummary

if TYPE_CHECKING:
    from guarddiag.explain.facts import Ambient
    from guarddiag.verdicts import HintCheck

SCHEMA = "guarddiag.explain/1"


@dataclass(frozen=True)
class SizeGuard:
    """A symbolic-size guard of an entry that reads a tensor's sizes (torch's shape environment): its form
    (a name of guardkinds.SHAPE_FORMS), its condition as the user would write it (``x.size(1) % 8 == 0``),
    the tensor's dims it reads (a stride or storage offset: none), whether it reads another object's sizes
    too, and the user's line behind it as torch names it (``""``: it names none; ``origin`` then holds torch's
    own line that added it, where torch names that: ``_inductor/codegen/cpp.py:2273 in need_use_acc_helper``)."""

    form: str
    condition: str
    dims: tuple[int, ...]
    others: bool = False
    location: str = ""
    origin: str = ""


@dataclass(frozen=True)
class TensorObject:
    """A tensor checked by metadata: dtype, sizes (``None``: a dynamic dim), requires_grad."""

    name: str
    role: str
    root: str
    how: str
    sources: tuple[str, ...]
    pinned: str
    dtype: str
    sizes: tuple[str, ...]
    requires_grad: str
    # The entry's symbolic-size guards on its sizes (ranges, remainders, 0/1 specialization, relations).
    size_guards: tuple[SizeGuard, ...] = ()
    count: int = 1


@dataclass(frozen=True)
class ValueObject:
    """An object whose value is baked in (``==``, ``is``; True/False told by id() on old torch)."""

    name: str
    role: str
    root: str
    how: str
    sources: tuple[str, ...]
    pinned: str
    value: str
    count: int = 1


@dataclass(frozen=True)
class IdentityObject:
    """An object checked by id(); ``how`` is "identity (code)" for a module or function the code calls."""

    name: str
    role: str
    root: str
    how: str
    sources: tuple[str, ...]
    pinned: str
    type: str = ""
    count: int = 1


@dataclass(frozen=True)
class TypeObject:
    """An object checked by type only; ``dynamic``: a number whose value is not guarded (dynamic)."""

    name: str
    role: str
    root: str
    how: str
    sources: tuple[str, ...]
    pinned: str
    type: str
    dynamic: bool = False
    # The names of its submodules, checked in order, and the keys other rows read under it.
    submodules: tuple[str, ...] = ()
    read_keys: tuple[str, ...] = ()
    count: int = 1


@dataclass(frozen=True)
class ContentObject:
    """A container checked by its content: keys in order, a key set, or its length."""

    name: str
    role: str
    root: str
    how: str
    sources: tuple[str, ...]
    pinned: str
    keys: tuple[str, ...] = ()
    submodules: bool = False
    key_set: str = ""
    length: str = ""
    type: str = ""
    count: int = 1


@dataclass(frozen=True)
class FamilyObject:
    """Similar objects under one root collapsed into one row: parameters, buffers, submodules, ``attr:NAME``."""

    name: str
    kind: str
    how: str
    members: tuple[GuardedObject, ...]
    count: int
    sources: tuple[str, ...]
    pinned: str


@dataclass(frozen=True)
class CallablesObject:
    """The modules and functions the code calls, checked by id(): one row for all of them."""

    members: tuple[IdentityObject, ...]
    how: str
    count: int
    sources: tuple[str, ...]
    pinned: str

    @property
    def name(self) -> str:
        return ""


@dataclass(frozen=True)
class FoldedObject:
    """Rows folded into one by the default view (``--full`` lists them): ``kind`` is "repeated" (elements
    of one list or module list, ``params[0..3]``), "internals" (what torch's and libraries' own code
    reads: function defaults and closure cells, class names, attributes of imported modules),
    "values" (settings of one object, each baked in) or "types" (objects checked by type only)."""

    name: str
    kind: str
    how: str
    members: tuple[GuardedObject, ...]
    count: int
    sources: tuple[str, ...]
    pinned: str


GuardedObject = TensorObject | ValueObject | IdentityObject | TypeObject | ContentObject | FamilyObject | CallablesObject | FoldedObject


@dataclass(frozen=True)
class CacheEntry:
    """The guard model of one compile of a frame; ``ambient``: the global state it checks."""

    compile_id: CompileId
    objects: tuple[GuardedObject, ...]
    ambient: tuple[Ambient, ...]
    # Rows the default view folded into FoldedObject rows (0 with --full).
    folded: int = 0


@dataclass(frozen=True)
class CauseCount:
    """A cause that really recompiled the function: the first of its recompiles' causes with its identity, and how many."""

    cause: Cause
    count: int


# Where a line to write goes (CodeLine.where):
#   top_of_script     once, after the script's imports and before anything is compiled (a config setting);
#   before_each_call  at each call of the compiled function, before it, on the value passed as ``target``;
#   wrap_argument     at each call, the value passed as ``target`` replaced by ``code`` (``torch.tensor(lr)``);
#   after_each_call   the statement ``at`` (the user's file:line) moves out of the compiled function to after
#                     each call: the function's parameters are the values passed, what it returns is the call's result.
WHERE = ("top_of_script", "before_each_call", "wrap_argument", "after_each_call")


@dataclass(frozen=True)
class CodeLine:
    """A line to write, as a value: ``code`` in the user's names, ``where`` it goes (one of :data:`WHERE`),
    ``function`` the user's function whose calls a per-call line goes at (a moved statement leaves it),
    ``target`` the parameter a per-call line acts on, ``at`` the user's line a moved statement comes from,
    ``setting`` the config flag a config line sets (``torch._dynamo.config.allow_unspec_int_on_nn_module``),
    ``value`` the value it sets (as Python source: ``True``, ``"L['x']:0"``)."""

    code: str
    where: str
    function: str = ""
    target: str = ""
    at: str = ""
    setting: str = ""
    value: str = ""


@dataclass(frozen=True)
class Choice:
    """Another answer to the same causes: a hint id (words: render/explain_hints.py) and its lines (none: advice only)."""

    hint: str
    lines: tuple[CodeLine, ...] = ()


@dataclass(frozen=True)
class FixHint:
    """What to change so that a cause that really recompiled stops doing so.

    ``hint`` names the advice (render/explain_hints.py words it; docs/hints.md lists each and its rule)
    about ``subject``, the object in user terms (``aliased``: the objects an aliasing hint is about, torch's
    names in its order; its ``subject`` is empty); ``lines`` are what to write; ``kind`` is "fix" when
    applying them removes the recompile (tests/e2e/explain/test_hints.py applies each to a real script), "note"
    when the recompile is inherent or expected. ``unknown`` names what guarddiag cannot tell from the
    log and the source (one of :data:`guarddiag.explain.hints.UNKNOWNS`): ``choices`` are then the
    answers for each case; otherwise they are alternatives to ``lines``. ``check``: the command that
    verifies a config hint on the script (``guarddiag compare``).
    """

    # The causes it answers: the first of each identity (Cause.key).
    causes: tuple[Cause, ...]
    count: int
    hint: str
    subject: str
    literal: str = ""
    check: str = ""
    kind: str = "fix"
    lines: tuple[CodeLine, ...] = ()
    choices: tuple[Choice, ...] = ()
    unknown: str = ""
    aliased: tuple[str, ...] = ()
    # A config hint's standing for this script: verified by a compare, shown to do nothing, or not
    # verified (guarddiag.verdicts.check_hints sets it; None: a code change, or not checked).
    verification: HintCheck | None = None


@dataclass(frozen=True)
class FunctionExplanation:
    """A compiled function: its cache entries' guard models, why it recompiled and how to fix it.
    ``function``: the run's summary of it (its name, place and counts; renderers name it from that)."""

    function: FunctionSummary
    entries: tuple[CacheEntry, ...]
    causes: tuple[CauseCount, ...] = ()
    hints: tuple[FixHint, ...] = ()
    # The sources of the rows a user must act on: they differ between cache entries, or a cause names them.
    matters: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def file(self) -> str:
        return self.function.file

    @property
    def line(self) -> int | None:
        return self.function.line

    @property
    def compiles(self) -> int:
        return self.function.compiles

    @property
    def recompiles(self) -> int:
        return self.function.recompiles

    @property
    def no_code(self) -> int:
        """Compiles that installed no code (they raised, or Dynamo skipped the frame): no cache entry of theirs."""
        return len(self.function.failed_compiles)


@dataclass(frozen=True)
class Explanation:
    """The guard model of every compiled function of a run."""

    functions: tuple[FunctionExplanation, ...]
    torch_version: str | None = None
    era: str = ""
    full: bool = False
    schema: str = SCHEMA
