"""The guard model as facts: what each cache entry of a compiled function checks, and how.

No sentences here: :mod:`guarddiag.render.explain_words` says each fact in the user's words.
An object is named by its source in user terms (``m.lin.weight``) and the role of its root
name (argument, global, closure variable...); ``pinned`` is what the entry pinned (ids,
values, sizes), compared across entries.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The guard model of one compile of a frame; ``ambient``: the global state it checks, by name."""

    compile_id: str
    objects: tuple[GuardedObject, ...]
    ambient: tuple[str, ...]
    # Rows the default view folded into FoldedObject rows (0 with --full).
    folded: int = 0


@dataclass(frozen=True)
class CauseCount:
    """A cause that really recompiled the function (category and subject as :class:`guarddiag.model.Cause` has them)."""

    category: str
    subject: str
    count: int


@dataclass(frozen=True)
class FixHint:
    """What to change so that a cause that really recompiled stops doing so.

    ``hint`` names the advice (render/explain_words.py says it) about ``subject``, the object in user
    terms; ``kind`` is "fix" when applying it removes the recompile (each is checked on a scenario
    by tests/e2e/test_explain.py), "note" when the recompile is inherent or expected.
    """

    causes: tuple[tuple[str, str], ...]
    count: int
    hint: str
    subject: str
    literal: str = ""
    check: str = ""
    kind: str = "fix"


@dataclass(frozen=True)
class FunctionExplanation:
    """A compiled function: its cache entries' guard models, why it recompiled and how to fix it."""

    label: str
    name: str
    file: str
    line: int | None
    compiles: int
    recompiles: int
    entries: tuple[CacheEntry, ...]
    causes: tuple[CauseCount, ...] = ()
    hints: tuple[FixHint, ...] = ()
    # Compiles that installed no code (they raised, or Dynamo skipped the frame): no cache entry of theirs.
    no_code: int = 0
    # The sources of the rows a user must act on: they differ between cache entries, or a cause names them.
    matters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Explanation:
    """The guard model of every compiled function of a run."""

    functions: tuple[FunctionExplanation, ...]
    torch_version: str | None = None
    era: str = ""
    full: bool = False
    schema: str = SCHEMA
