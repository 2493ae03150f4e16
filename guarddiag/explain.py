"""The guard model of a compiled function: what its cache entries depend on, and what would recompile.

Pure: parser events in, an :class:`Explanation` out. Each guard of a listing is read into a
:class:`_Fact` (which object, how it is checked, the pinned value); facts are grouped by the
object in the user's terms (argument ``m``, ``m.lin.weight``, global ``FLAG``, ``d['a']``) and
large families (parameters, submodules, per-layer attributes) collapse into one row each.
Sentences are derived from the guards only: an object without a guard is not checked at all.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from guarddiag.build import RunBuilder
from guarddiag.causes import readable_source
from guarddiag.logparse.events import Event, GuardListing
from guarddiag.logparse.framing import parse_compile_id
from guarddiag.model import Cause, FunctionSummary, Guard, function_label
from guarddiag.sourceinfo import local_roles

SCHEMA = "guarddiag.explain/1"
NOT_LISTED = (
    "anything not listed is not checked: changing it does not recompile, "
    "and the compiled code keeps using what it read when it was compiled"
)


@dataclass(frozen=True)
class GuardedObject:
    """One object (or a collapsed family of similar objects) and how a cache entry checks it."""

    name: str
    how: str
    detail: str
    recompiles: tuple[str, ...] = ()
    no_recompile: tuple[str, ...] = ()
    count: int = 1
    sources: tuple[str, ...] = ()
    # What the entry pinned (ids, values, sizes): compared across entries, never shown as such.
    pinned: str = ""


@dataclass(frozen=True)
class CacheEntry:
    """The guard model of one compile of a frame."""

    compile_id: str
    objects: tuple[GuardedObject, ...]
    ambient: str
    differs: tuple[str, ...] = ()


@dataclass(frozen=True)
class FixHint:
    """What to change so that a cause that really recompiled stops doing so.

    ``kind`` is "fix" when applying the hint removes the recompile (each is checked on a scenario
    by tests/e2e/test_explain.py), "note" when the recompile is inherent or expected and the text
    says what can be done about its cost.
    """

    cause: str
    count: int
    hint: str
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
    causes: tuple[str, ...] = ()
    hints: tuple[FixHint, ...] = ()
    # Compiles that installed no code (they raised, or Dynamo skipped the frame): no cache entry of theirs.
    no_code: int = 0


@dataclass(frozen=True)
class Explanation:
    """The guard model of every compiled function of a run."""

    functions: tuple[FunctionExplanation, ...]
    torch_version: str | None = None
    era: str = ""
    full: bool = False
    note: str = NOT_LISTED
    schema: str = SCHEMA


# --- reading one guard ----------------------------------------------------------------------

_SRC = r"(?P<src>(?:___odict_getitem\()?[LG]\[.+?)"
_TENSOR = re.compile(
    r"^check_tensor\(" + _SRC + r", (?P<cls>\w+), DispatchKeySet\([^)]*\), (?P<dtype>torch\.\w+), device=(?P<device>[^,]+), "
    r"requires_grad=(?P<rg>\w+), size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]\)"
)
_ID = re.compile(r"^___check_obj_id\(" + _SRC + r", (?P<id>\d+)\)(?:, type=<class '(?P<type>[^']+)'>)?")
_TYPE = re.compile(r"^___check_type_id\(" + _SRC + r", (?P<id>\d+)\)(?:, type=<class '(?P<type>[^']+)'>)?")
_SRC2 = _SRC.replace("src", "src2")
_KEY_AT = re.compile(r"^list\((?:dict\.keys\(" + _SRC + r"\)|" + _SRC2 + r"\.keys\(\))\)\[(?P<i>\d+)\] == (?P<key>.+)$")
_KEY_SET = re.compile(r"^(?:set\(" + _SRC + r"\.keys\(\)\) == \{(?P<keys>.*)\}|___key_to_id\(" + _SRC2 + r"\) == \[(?P<keys2>.*)\])$")
_LEN = re.compile(r"^len\(" + _SRC + r"\) == (?P<n>\d+)$")
_CONTAINS = re.compile(r"^(?P<neg>not )?___dict_contains\((?P<key>'[^']*'), " + _SRC + r"\)$")
_MARKING = re.compile(r"^hasattr\(" + _SRC + r", '_dynamo_\w+'\) == False$")
_ISNAN = re.compile(r"^not math\.isnan\(" + _SRC + r"\)$")
# An unspecialized (dynamic) int: only its range is guarded, e.g. ``-9223372036854775808 <= L['self'].layer_idx``.
_SCALAR_RANGE = re.compile(r"^(?:-?\d+ <= " + _SRC + r"|" + _SRC2 + r" <= -?\d+)$")
_VALUE = re.compile(r"^" + _SRC + r" (?P<op>==|is not|is|!=) (?P<val>.+)$")
_SIZE_TERM = re.compile(r"(?P<src>[LG]\[[^\]]+\](?:\.\w+|\[[^\]]+\])*?)\.(?P<what>size|stride)\(\)\[(?P<dim>\d+)\]")
_LOWER = re.compile(r"^(?P<lo>\d+) <= (?P<term>\S+)$")
_UPPER = re.compile(r"^(?P<term>\S+) <= (?P<hi>\d+)$")
_CODE_LINE = re.compile(r"^(?:def |return\b|if not |_var\d|Python shape guard function|\w+ = )")
_AMBIENT_KINDS = {
    "GLOBAL_STATE": "global torch state",
    "DEFAULT_DEVICE": "default device",
    "TORCH_FUNCTION_MODE_STACK": "torch function mode",
    "TORCH_FUNCTION_STATE": "torch function mode",
    "GRAD_MODE": "grad mode",
    "BACKEND_MATCH": "compiler backend",
    "NO_TENSOR_ALIASING": "no aliasing between tensor inputs",
}
_INTERNAL_GLOBAL = re.compile(r"^G\['__(?:import_|builtins_dict)|^G\['__import_torch")
_MODULE_INTERNALS = re.compile(r"\.(?:_modules|_parameters|_buffers|__dict__)$")
_BUILTIN = re.compile(r"^G\['__builtins_dict___\d+'\]\['(?P<name>\w+)'\]$")
_SINGLETONS = ("builtins.bool", "bool", "NoneType", "builtins.NoneType")


class _Fact(NamedTuple):
    """One guard, read: the object it checks, how, and the value it pins (a tuple: one is made per distinct guard)."""

    source: str
    how: str
    value: str = ""
    extra: Mapping[str, str] = MappingProxyType({})


def read_guard(g: Guard) -> _Fact | None:
    """The fact a guard states, ``None`` for guard-function source lines and hooks torch adds for itself."""
    expr = g.expr.strip()
    if g.kind in _AMBIENT_KINDS:
        return _Fact("", "ambient", _ambient_value(g))
    if "top_saved_tensors_hooks" in expr:
        return _Fact("", "ambient", "saved-tensor hooks")
    if not expr or _CODE_LINE.match(expr):
        return None
    # A size term always holds ".size()[" or ".stride()[": most guards need no search for one.
    if (".size()[" in expr or ".stride()[" in expr) and not expr.startswith(("check_tensor(", "hasattr(")):
        size = _SIZE_TERM.search(expr)
        if size is not None:
            return _Fact(size["src"], "shape", expr)
    for starts, pattern, make in _READERS:
        if expr.startswith(starts):
            m = pattern.match(expr)
            if m is not None:
                return make(m, g)
    m = _VALUE.match(expr)
    if m is not None and m["val"].startswith(("G[", "L[")):
        return None  # two names for one object (``G['F'] is G['__import_...'].F``): nothing a user changes
    if m is not None:
        return _Fact(m["src"], "value", m["val"] if m["op"] == "==" else f"{m['op']} {m['val']}")
    return _Fact(g.source, "other", expr) if g.source else None


def _tensor_fact(m: re.Match[str], g: Guard) -> _Fact:
    return _Fact(
        m["src"],
        "tensor",
        f"{m['dtype']} {m['size']} {m['rg']} {m['device']}",
        {"cls": m["cls"], "dtype": m["dtype"].removeprefix("torch."), "size": m["size"], "requires_grad": m["rg"], "device": m["device"]},
    )


_SOURCE_START = ("L[", "G[", "___odict_getitem(")
# Each reader with the text every expression it matches starts with (so a guard tries only the
# reader its first word names: no expression matches two of them), tried in order.
_READERS: tuple[tuple[tuple[str, ...], re.Pattern[str], Callable[[re.Match[str], Guard], _Fact]], ...] = (
    (("check_tensor(",), _TENSOR, _tensor_fact),
    (("___check_obj_id(",), _ID, lambda m, g: _Fact(m["src"], "identity", m["id"], {"type": m["type"] or ""})),
    (("___check_type_id(",), _TYPE, lambda m, g: _Fact(m["src"], "type", m["id"], {"type": m["type"] or ""})),
    (("list(",), _KEY_AT, lambda m, g: _Fact(m["src"] or m["src2"], "key", m["key"], {"index": m["i"]})),
    (("set(", "___key_to_id("), _KEY_SET, lambda m, g: _Fact(m["src"] or m["src2"], "keys", m["keys"] if m["keys"] is not None else m["keys2"])),
    (("len(",), _LEN, lambda m, g: _Fact(m["src"], "length", m["n"], {"dict": "1" if g.kind == "DICT_LENGTH" else ""})),
    (("___dict_contains(", "not ___dict_contains("), _CONTAINS, lambda m, g: _Fact(m["src"], "contains", m["key"], {"negated": "1" if m["neg"] else ""})),
    (("hasattr(",), _MARKING, lambda m, g: _Fact(m["src"], "marking")),
    (("not math.isnan(",), _ISNAN, lambda m, g: _Fact(m["src"], "dynamic_scalar")),
    (("-", *"0123456789", *_SOURCE_START), _SCALAR_RANGE, lambda m, g: _Fact(m["src"] or m["src2"], "dynamic_scalar")),
)


def _ambient_value(g: Guard) -> str:
    """``grad mode off``, ``default device None``...: read off the guard where torch prints it."""
    expr = g.expr
    if g.kind == "GLOBAL_STATE":
        state = expr.partition(" against ")[2]
        if state:
            try:
                grad = json.loads(state).get("grad_mode")
            except ValueError:
                grad = None
            if grad is not None:
                return f"grad mode {'on' if grad else 'off'}, autocast, default dtype, deterministic algorithms"
        if "___is_grad_enabled" in expr:
            return f"grad mode {'off' if expr.startswith('not ') else 'on'}"
        if "deterministic" in expr:
            return "deterministic algorithms"
        if "torch_function" in expr:
            return "torch function mode"
        return "global torch state (grad mode, autocast, default dtype, deterministic algorithms)"
    if g.kind == "DEFAULT_DEVICE":
        return "default device"
    return _AMBIENT_KINDS[g.kind]


# --- naming objects ---------------------------------------------------------------------------


def user_name(src: str) -> str:
    """``L['m']._modules['lin']._parameters['weight']`` -> ``m.lin.weight``; builtins by their name."""
    m = _BUILTIN.match(src)
    if m is not None:
        return m["name"]
    return readable_source(src).removesuffix(".__code__")


_ROOT_NAME = re.compile(r"[LG]\['([^']*)'\]")


def _root(src: str) -> str:
    m = _ROOT_NAME.match(src.removeprefix("___odict_getitem("))
    return m.group(1) if m else ""


def _role(src: str, roles: Mapping[str, str]) -> str:
    if src.startswith(("G[", "___odict_getitem(G[")):
        return "global"
    return roles.get(_root(src), "local")


def _short_type(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1] if qualname else ""


# --- grouping facts into objects --------------------------------------------------------------


@dataclass
class _Node:
    """All facts about one source, gathered before sentences are written."""

    src: str
    facts: list[_Fact] = field(default_factory=list)

    def of(self, how: str) -> list[_Fact]:
        return [f for f in self.facts if f.how == how]


_KEY_STEP = re.compile(r"\[('[^']*'|\d+)\]")


class _Index:
    """The nodes of one listing and what a row asks about the others, each map built once.

    A row must not scan every other source (``s.startswith(src + "[")`` for each object is
    quadratic in the listing: issue 18). Each map below is built on first use in one pass over the
    sources, keyed by every prefix a question can name, so a row's question is a lookup. While
    ``asked`` is a list, every question and its answer are noted in it: a row remembered by
    :class:`_Memo` is reused only where the same questions get the same answers.
    """

    def __init__(self, nodes: Mapping[str, _Node], key_steps: dict[str, tuple[tuple[str, str], ...]] | None = None) -> None:
        self.nodes = nodes
        # Each source's (prefix, key) steps, kept across the listings of one function.
        self._key_steps = key_steps if key_steps is not None else {}
        self.asked: list[tuple[str, str, object]] | None = None
        self._keys_under: dict[str, set[str]] | None = None
        self._bool_ids: set[str] | None = None
        self._identity_parents: set[str] | None = None

    def keys_under(self, src: str) -> AbstractSet[str]:
        """The keys other sources read right under the node ``src``: ``'a'`` for ``src['a']`` and ``src['a'].b``."""
        if self._keys_under is None:
            index: dict[str, set[str]] = {}
            steps = self._key_steps
            for s in self.nodes:
                known = steps.get(s)
                if known is None:
                    known = steps[s] = _key_steps(s)
                for prefix, key in known:
                    keys = index.get(prefix)
                    if keys is None:
                        index[prefix] = {key}
                    else:
                        keys.add(key)
            self._keys_under = index
        return self._note("keys_under", src, self._keys_under.get(src, _NO_KEYS))

    def bool_ids(self) -> set[str]:
        """The ids the ``.training`` identity guards pin: True/False on torch that prints no type."""
        if self._bool_ids is None:
            self._bool_ids = {f.value for s, n in self.nodes.items() if s.endswith(".training") for f in n.of("identity")}
        return self._note("bool_ids", "", self._bool_ids)

    def has_identity_child(self, src: str) -> bool:
        """Whether a global source ``src + "." + ...`` is checked by id(); ``src`` starts with ``G[``."""
        if self._identity_parents is None:
            parents: set[str] = set()
            for s, n in self.nodes.items():
                if s.startswith("G[") and n.of("identity"):
                    p = s.find(".")
                    while p != -1:
                        parents.add(s[:p])
                        p = s.find(".", p + 1)
            self._identity_parents = parents
        return self._note("has_identity_child", src, src in self._identity_parents)

    def answers(self, asked: Iterable[tuple[str, str, object]]) -> bool:
        """Whether this listing answers each noted question as noted."""
        for question, src, answer in asked:
            now = self.bool_ids() if question == "bool_ids" else getattr(self, question)(src)
            if now != answer:
                return False
        return True

    def _note(self, question: str, src: str, answer: _T) -> _T:
        if self.asked is not None:
            self.asked.append((question, src, answer))
        return answer


def _key_steps(s: str) -> tuple[tuple[str, str], ...]:
    """Every (prefix, key) with ``s`` = ``prefix[key]...``: s.startswith(src + "[") holds exactly when s
    has a "[" at len(src) and s[:len(src)] == src."""
    out = []
    p = s.find("[")
    while p != -1:
        m = _KEY_STEP.match(s, p)
        if m is not None:
            out.append((s[:p], m.group(1)))
        p = s.find("[", p + 1)
    return tuple(out)


_T = TypeVar("_T")
_NO_KEYS: frozenset[str] = frozenset()


class _Memo:
    """What one function's listings have in common, worked out once.

    Each cache entry of a function lists its guards anew, and entry after entry they are mostly the
    same: each guard is read (:func:`read_guard`) once per function, and each object's row written
    once for the same facts and the same answers from :class:`_Index`. A hit gives exactly what
    the work would have given: guards are keyed by all that is read of them, rows by their
    source, their facts (the very objects, which ``steps`` keeps alive) and ``roles``.
    """

    def __init__(self) -> None:
        self.steps: dict[tuple[str, str, str], tuple[str, _Fact | str] | None] = {}
        self.families: dict[str, tuple[str, str] | None] = {}
        self.rows: dict[tuple[str, tuple[int, ...]], tuple[GuardedObject | None, tuple[tuple[str, str, object], ...]]] = {}
        self.roles: Mapping[str, str] | None = None
        self.key_steps: dict[str, tuple[tuple[str, str], ...]] = {}

    def row(self, node: _Node, index: _Index, roles: Mapping[str, str]) -> GuardedObject | None:
        """The row of ``node`` (``None``: it has none), reused from an earlier listing where it cannot differ."""
        if roles is not self.roles:
            self.rows.clear()
            self.roles = roles
        key = (node.src, tuple(map(id, node.facts)))
        known = self.rows.get(key)
        if known is not None and index.answers(known[1]):
            return known[0]
        index.asked = []
        try:
            row = _row(node, index, roles)
            asked = tuple(index.asked)
        finally:
            index.asked = None
        self.rows[key] = (row, asked)
        return row

    def family(self, src: str) -> tuple[str, str] | None:
        if src in self.families:
            return self.families[src]
        fam = self.families[src] = _family(src)
        return fam


def _nodes(guards: Iterable[Guard], memo: _Memo | None = None) -> tuple[dict[str, _Node], list[str]]:
    """Facts by source (module internals folded into their owner), and the ambient names in order."""
    steps = memo.steps if memo is not None else {}
    nodes: dict[str, _Node] = {}
    ambient: list[str] = []
    for g in guards:
        key = (g.kind, g.expr, g.source)  # all that read_guard reads of a guard
        step = steps.get(key, _UNREAD)
        if step is _UNREAD:
            step = steps[key] = _step(g)
        if step is None:
            continue
        src, what = step
        if isinstance(what, str):
            if what and what not in ambient:
                ambient.append(what)
            continue
        node = nodes.get(src)
        if node is None:
            node = nodes[src] = _Node(src)
        node.facts.append(what)
    return nodes, ambient


_UNREAD: Any = object()  # a guard not read yet (None is a guard that goes nowhere)


def _step(g: Guard) -> tuple[str, _Fact | str] | None:
    """Where a guard goes: ``None`` (nowhere), ``("", name)`` (an ambient name) or ``(source, fact)``."""
    fact = read_guard(g)
    if fact is None:
        return None
    if fact.how == "ambient" or _INTERNAL_GLOBAL.match(fact.source or "x") and not _BUILTIN.match(fact.source):
        return "", fact.value if fact.how == "ambient" else _internal_name(fact.source)
    src = fact.source
    if fact.how == "type" and _MODULE_INTERNALS.search(src):
        return None  # the dicts inside an nn.Module: implementation detail, never a user's change
    if fact.how == "contains" and src.endswith(".__dict__"):
        src = src.removesuffix(".__dict__")
    if fact.how in ("key", "keys") and src.endswith("._modules"):
        src = src.removesuffix("._modules")
        fact = _Fact(src, "submodule_" + fact.how, fact.value, fact.extra)
    return src, fact


def _internal_name(src: str) -> str:
    if "_global_" in src and "hooks" in src:
        return "nn.Module global hooks"
    return "torch internals"


_PARAM = re.compile(r"\._(?:parameters|buffers)\['[^']*'\]$")
_SUBMODULE = re.compile(r"\._modules\['[^']*'\]$")
_SUBMODULE_ATTR = re.compile(r"\._modules\['[^']*'\]\.(?P<attr>\w+)$")


def _is_param(src: str) -> bool:
    return "._" in src and _PARAM.search(src) is not None


def _is_submodule(src: str) -> bool:
    return "._modules[" in src and _SUBMODULE.search(src) is not None


def _family(src: str) -> tuple[str, str] | None:
    """The family a nested object collapses into: (root, kind), e.g. ``("m", "parameters")``."""
    root = _root(src)
    if _is_param(src):
        return root, "buffers" if "._buffers[" in src else "parameters"
    if _is_submodule(src):
        return root, "submodules"
    m = _SUBMODULE_ATTR.search(src) if "._modules[" in src else None
    if m is not None:
        return root, f"attr:{m['attr']}"
    if src.endswith(".training"):
        return root, "attr:training"
    return None


def objects_of(
    guards: Iterable[Guard], roles: Mapping[str, str], full: bool = False, memo: _Memo | None = None
) -> tuple[tuple[GuardedObject, ...], str]:
    """The guard model of one listing: one row per object (families collapsed unless ``full``), and the ambient line.

    ``memo``: shared by the listings of one function (same ``roles``), so that they are read once.
    """
    memo = memo if memo is not None else _Memo()
    nodes, ambient = _nodes(guards, memo)
    _attach_shapes(nodes)
    rows: list[GuardedObject] = []
    families: dict[tuple[str, str], list[GuardedObject]] = {}
    callables: list[GuardedObject] = []
    index = _Index(nodes, memo.key_steps)
    for src, node in nodes.items():
        row = memo.row(node, index, roles)
        if row is None:
            continue
        if row.how == "identity (code)":
            callables.append(row)
            continue
        fam = None if full else memo.family(src)
        if fam is not None:
            families.setdefault(fam, []).append(row)
        else:
            rows.append(row)
    for (root, kind), members in families.items():
        rows.append(members[0] if len(members) == 1 and kind != "parameters" else _collapse(root, kind, members))
    if callables:
        rows.append(_callables_row(callables))
    rows.sort(key=_row_order)
    return tuple(rows), ", ".join(ambient)


def _row_order(row: GuardedObject) -> tuple[int, str]:
    # Arguments and their contents first, then globals, then the collapsed families and callables.
    rank = 3 if row.how == "identity (code)" else 2 if row.count > 1 else 0
    return rank, row.sources[0] if row.sources else row.name


# --- sentences --------------------------------------------------------------------------------


def _row(node: _Node, index: _Index, roles: Mapping[str, str]) -> GuardedObject | None:
    if node.of("shape") and not node.of("tensor"):
        return None  # folded into its tensor by _attach_shapes
    return _describe(node, index, roles)


def _describe(node: _Node, index: _Index, roles: Mapping[str, str]) -> GuardedObject | None:
    src = node.src
    name = user_name(src)
    root_name = _root(src)
    role = _role(src, roles)
    label = f"{role} `{name}`" if name == root_name else f"`{name}`"
    tensor = node.of("tensor")
    if tensor:
        return _tensor_row(label, name, src, tensor[0], node.of("shape"), role)
    ident, typ, value = node.of("identity"), node.of("type"), node.of("value")
    if value:
        return _value_row(label, name, src, value[0])
    if ident:
        return _identity_row(label, name, src, ident[0], index, role)
    keys = node.of("key") + node.of("keys") + node.of("length")
    if keys:
        return _content_row(label, name, src, node, typ)
    if typ or node.of("dynamic_scalar"):
        return _type_row(label, name, src, typ[0] if typ else _Fact(src, "type"), node, index, role)
    sub = node.of("submodule_key") + node.of("submodule_keys")
    if sub:
        return _content_row(label, name, src, node, typ)
    return None


def _tensor_row(label: str, name: str, src: str, fact: _Fact, shapes: list[_Fact], role: str) -> GuardedObject:
    sizes = [s.strip() for s in fact.extra["size"].split(",") if s.strip()]
    dynamic = [i for i, s in enumerate(sizes) if s == "None"]
    shown = "[" + ", ".join("*" if s == "None" else s for s in sizes) + "]"
    rg = fact.extra["requires_grad"]
    detail = f"tensor {fact.extra['dtype']} {shown} requires_grad={rg}"
    ranges = [_range_of(d, shapes) for d in dynamic]
    if dynamic:
        detail += "; dynamic dim " + ", ".join(f"{d} ({r})" for d, r in zip(dynamic, ranges, strict=True))
    recompile = [f"another dtype, device or requires_grad for `{name}` recompiles"]
    static = [str(i) for i, s in enumerate(sizes) if s != "None"]
    if static:
        dims = ", ".join(static)
        recompile.append(f"another size of `{name}` at dim {dims} recompiles: {'they are' if len(static) > 1 else 'it is'} static")
    elif not sizes:
        recompile.append(f"a `{name}` with dimensions (not 0-d) recompiles")
    ok = [f"new values in `{name}`: no recompile, only its metadata is checked"]
    if dynamic:
        ok.append(f"another size of `{name}` at dim {', '.join(map(str, dynamic))}: no recompile, dynamic ({'; '.join(ranges)})")
        recompile.extend(_relations(shapes, name))
    how = "tensor metadata" + (" (dynamic dims)" if dynamic else "")
    return GuardedObject(label, how, detail, tuple(recompile), tuple(ok), sources=(src,), pinned=f"{fact.extra['dtype']} {shown} {rg}")


def _range_of(dim: int, shapes: list[_Fact]) -> str:
    lo, hi = "0", ""
    for s in shapes:
        for pattern, key in ((_LOWER, "lo"), (_UPPER, "hi")):
            m = pattern.match(s.value)
            if m and _dim_of(m["term"]) == dim:
                lo, hi = (m["lo"], hi) if key == "lo" else (lo, m["hi"])
    return f"size >= {lo}" + (f" and <= {hi}" if hi else "") + (", sizes 0 and 1 get their own entry" if lo == "2" else "")


def _dim_of(term: str) -> int | None:
    m = _SIZE_TERM.fullmatch(term)
    return int(m["dim"]) if m and m["what"] == "size" else None


def _relations(shapes: list[_Fact], name: str) -> list[str]:
    out = []
    for s in shapes:
        if " == " in s.value and len(_SIZE_TERM.findall(s.value)) == 2:
            left, right = s.value.split(" == ", 1)
            out.append(f"breaking `{_term_text(left)} == {_term_text(right)}` recompiles")
    return out


def _term_text(term: str) -> str:
    m = _SIZE_TERM.search(term)
    return f"{user_name(m['src'])}.size({m['dim']})" if m else term


def _attach_shapes(nodes: dict[str, _Node]) -> None:
    """Shape-env guards (``2 <= L['x'].size()[0]``) belong to the tensors they mention."""
    # What each owner already holds, as keys: ``fact not in owner.facts`` scans a list that grows
    # with every relation a tensor takes part in, quadratic for a tensor related to many others.
    held: dict[int, set[tuple[str, str, str, tuple[tuple[str, str], ...]]]] = {}

    def attach(owner: _Node, fact: _Fact) -> None:
        keys = held.get(id(owner))
        if keys is None:
            keys = held[id(owner)] = {_fact_key(f) for f in owner.facts}
        key = _fact_key(fact)
        if key not in keys:
            keys.add(key)
            owner.facts.append(fact)

    for node in list(nodes.values()):
        shapes = node.of("shape")
        for fact in shapes:
            for m in _SIZE_TERM.finditer(fact.value):
                owner = nodes.get(m["src"])
                if owner is not None and owner is not node:
                    attach(owner, fact)
        if shapes and not node.of("tensor") and node.src.endswith(".size"):
            owner = nodes.get(node.src.removesuffix(".size"))
            if owner is not None:
                for fact in shapes:
                    attach(owner, fact)


def _fact_key(f: _Fact) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """What makes two facts equal (``==`` on the dataclass), hashable."""
    return f.source, f.how, f.value, tuple(sorted(f.extra.items()))


def _value_row(label: str, name: str, src: str, fact: _Fact) -> GuardedObject:
    val = fact.value
    if name.endswith(".training"):
        change = f"calling .train()/.eval() so that `{name}` changes recompiles"
        return GuardedObject(label, "value", f"value {val}", (change,), (), sources=(src,), pinned=val)
    return GuardedObject(
        label, "value", f"value {val}", (f"changing `{name}` recompiles: its value {val} is baked in",), (), sources=(src,), pinned=val
    )


def _identity_row(label: str, name: str, src: str, fact: _Fact, index: _Index, role: str) -> GuardedObject:
    typ = fact.extra.get("type", "")
    # Old torch prints no type; True/False are singletons whose ids the `.training` guards reveal.
    if typ in _SINGLETONS or name.endswith(".training") or fact.value in index.bool_ids():
        return _value_row(label, name, src, _Fact(src, "value", "True/False (checked by id)"))
    if _is_code(src, typ, index):
        return GuardedObject(label, "identity (code)", "id()", (), (), sources=(src,), pinned=fact.value)
    what = f" ({_short_type(typ)})" if typ and _short_type(typ) != name else ""
    who = f"as {role} `{name}`" if name == _root(src) and role != "global" else f"as `{name}`"
    if role == "global" and name == _root(src):
        recompile = (f"rebinding global `{name}` to another object recompiles: it is checked by id()",)
    else:
        recompile = (f"passing another object {who} recompiles, even an equal one: it is checked by id()",)
    # An object pinned by id() is assumed unchanged: only attributes with a guard of their own are re-checked.
    ok = (f"changing an attribute of `{name}` that is not listed here: no recompile (the compiled code keeps the old value)",)
    return GuardedObject(label + what, "identity", "id()", recompile, ok, sources=(src,), pinned=fact.value)


def _is_code(src: str, typ: str, index: _Index) -> bool:
    """A module or function the code calls (``torch.tanh``), as opposed to a user object checked by id()."""
    if _BUILTIN.match(src) or src.endswith(".__code__"):
        return True
    if typ:
        return typ in ("module", "builtin_function_or_method", "function", "code", "method-wrapper", "wrapper_descriptor")
    if _BUILTIN.match(src) or src.endswith(".__code__"):
        return True
    # Old torch prints no type: a global attribute chain (``G['torch'].tanh``), or a global with such children.
    chained = src.startswith("G[") and not re.fullmatch(r"G\['[^']*'\]", src)
    return chained or (src.startswith("G[") and index.has_identity_child(src))


def _type_row(label: str, name: str, src: str, fact: _Fact, node: _Node, index: _Index, role: str) -> GuardedObject:
    typ = _short_type(fact.extra.get("type", "")) or "object"
    who = f"as {role} `{name}`" if name == _root(src) and role != "global" else f"for `{name}`"
    if node.of("dynamic_scalar"):
        kind = typ if typ != "object" else "number"
        return GuardedObject(
            label,
            "type (dynamic value)",
            f"dynamic {kind} (type checked, value not)",
            (f"a `{name}` of another type recompiles",),
            (f"another {kind} value {who}: no recompile, `{name}` is a dynamic {kind}",),
            sources=(src,),
        )
    recompile = [f"an object of another type {who} recompiles"]
    sub = sorted(node.of("submodule_key"), key=lambda f: int(f.extra["index"])) + node.of("submodule_keys")
    if sub:
        shown = ", ".join(f.value for f in sub) if len(sub) <= 6 else f"{sub[0].value} .. {sub[-1].value}"
        recompile.append(f"adding, removing or reordering submodules of `{name}` recompiles: their names ({shown}) are checked")
    ok: list[str] = []
    read_keys = sorted(index.keys_under(src))
    if typ == "dict" or read_keys:
        if read_keys:
            ok.append(f"adding keys to `{name}`: no recompile, `{name}` is only read at key {', '.join(read_keys)}")
    elif name == _root(src) and role != "global":
        ok.append(f"passing another {typ} instance {who}: no recompile, only its type is checked (and what is listed under it)")
    elif typ not in ("tuple", "list"):
        ok.append(f"replacing `{name}` by another {typ} instance: no recompile, only its type is checked (and what is listed under it)")
    shown = label + (f" ({typ})" if typ != "object" else "")
    return GuardedObject(shown, "type", f"type {typ}", tuple(recompile), tuple(ok), sources=(src,))


def _content_row(label: str, name: str, src: str, node: _Node, typ: list[_Fact]) -> GuardedObject:
    keys_at = sorted(node.of("key") + node.of("submodule_key"), key=lambda f: int(f.extra["index"]))
    key_sets = node.of("keys") + node.of("submodule_keys")
    length = node.of("length")
    if keys_at:
        keys = ", ".join(f.value for f in keys_at)
        shown = keys if len(keys_at) <= 6 else f"{keys_at[0].value} .. {keys_at[-1].value} ({len(keys_at)} keys)"
        what = "submodules of" if node.of("submodule_key") else "keys of"
        return GuardedObject(
            label,
            "content (keys in order)",
            f"keys {shown}",
            (f"adding, removing or reordering {what} `{name}` recompiles: its keys {shown} are checked in order",),
            ("changing the values stored under those keys: only their own guards apply",),
            sources=(src,),
            pinned=keys,
        )
    if key_sets:
        return GuardedObject(
            label,
            "content (key set)",
            f"keys {{{key_sets[0].value}}}",
            (f"adding or removing keys of `{name}` recompiles: its key set is checked",),
            ("reordering its keys: no recompile",),
            sources=(src,),
            pinned=key_sets[0].value,
        )
    n = length[0].value
    kind = _short_type(typ[0].extra.get("type", "")) if typ else ""
    kind = kind or ("dict" if length[0].extra.get("dict") else "")
    change = "adding or removing keys of" if kind == "dict" else "another length of"
    return GuardedObject(
        label + (f" ({kind})" if kind else ""),
        "content (length)",
        f"length {n}",
        (f"{change} `{name}` recompiles: its length {n} is checked",),
        (),
        sources=(src,),
        pinned=n,
    )


def _collapse(root: str, kind: str, members: list[GuardedObject]) -> GuardedObject:
    """One row for a family: ``300 parameters under `m`: tensor metadata each, all static shapes``."""
    n = len(members)
    sources = tuple(s for m in members for s in m.sources)
    pinned = "|".join(m.pinned for m in members)
    if kind in ("parameters", "buffers"):
        dynamic = [m for m in members if "dynamic" in m.how]
        shapes = "all static shapes" if not dynamic else f"{len(dynamic)} with dynamic dims"
        return GuardedObject(
            f"{n} {kind if n > 1 else kind[:-1]} under `{root}`",
            "tensor metadata",
            f"tensor metadata each, {shapes}",
            ("changing the shape, dtype, device or requires_grad of any of them recompiles",),
            ("updating their values (optimizer steps, load_state_dict of same shapes): no recompile",),
            count=n,
            sources=sources,
            pinned=pinned,
        )
    if kind == "submodules":
        hows = Counter(m.how for m in members)
        types = Counter(_TYPE_SUFFIX.sub(r"\1", m.name) for m in members)
        listed = ", ".join(f"{t} x{c}" for t, c in types.most_common(4))
        if hows.most_common(1)[0][0] == "identity":
            return GuardedObject(
                f"{n} submodules under `{root}` ({listed})",
                "identity",
                "id() each",
                (f"replacing any submodule of `{root}` by another object recompiles: each is checked by id()",),
                (),
                count=n,
                sources=sources,
                pinned=pinned,
            )
        return GuardedObject(
            f"{n} submodules under `{root}` ({listed})",
            "type",
            "type each",
            (f"replacing a submodule of `{root}` by one of another type recompiles",),
            ("replacing a submodule by another instance of the same type: no recompile",),
            count=n,
            sources=sources,
            pinned=pinned,
        )
    attr = kind.removeprefix("attr:")
    values = sorted({m.detail.removeprefix("value ") for m in members})
    shown = ", ".join(values[:3]) + (" ..." if len(values) > 3 else "")
    change = "calling .train()/.eval()" if attr == "training" else f"changing `{attr}` of any of them"
    return GuardedObject(
        f"`{attr}` of {n} objects under `{root}`",
        members[0].how,
        f"{'value' if members[0].how == 'value' else members[0].how} {shown}",
        (f"{change} recompiles: the values are baked in",),
        (),
        count=n,
        sources=sources,
        pinned=pinned,
    )


_TYPE_SUFFIX = re.compile(r"^.*\((\w+)\)$")


def _callables_row(rows: list[GuardedObject]) -> GuardedObject:
    names = sorted({r.name.split("`")[1] for r in rows})
    shown = ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return GuardedObject(
        f"modules and functions used: {shown}",
        "identity (code)",
        "id()",
        ("rebinding or monkeypatching one of them recompiles",),
        (),
        count=len(rows),
        sources=tuple(s for r in rows for s in r.sources),
        pinned="|".join(r.pinned for r in rows),
    )


# --- functions, entries, causes, hints --------------------------------------------------------


def explain_events(events: Iterable[Event], torch_version: str | None = None, full: bool = False) -> Explanation:
    """The guard model of every compiled function in a parsed log."""
    builder = RunBuilder()
    listings: dict[str, dict[int, tuple[Guard, ...]]] = {}
    for event in events:
        builder.add(event)
        if isinstance(event, GuardListing) and event.compile_id:
            frame, number = _frame_of(event.compile_id)
            if frame is not None:
                # A compile id listed twice (retries) keeps its last listing.
                listings.setdefault(frame, {})[number] = event.guards
    functions, _ = builder.functions()
    era = torch_era(torch_version, (g for per in listings.values() for gs in per.values() for g in gs))
    explained = tuple(
        _explain_function(f, listings.get(f.frame_ids[0], {}), torch_version, era, full) for f in functions if f.compiles
    )
    return Explanation(explained, torch_version, era, full)


def _frame_of(compile_id: str) -> tuple[str | None, int]:
    rank, _, bare = compile_id.rpartition(":")
    cid = parse_compile_id(bare)
    if cid is None:
        return None, 0
    return (f"{rank}:{cid.frame}" if rank else cid.frame), cid.number


def _explain_function(
    f: FunctionSummary, listings: Mapping[int, tuple[Guard, ...]], torch_version: str | None, era: str, full: bool
) -> FunctionExplanation:
    roles = local_roles(f.file, f.name, f.line)
    entries: list[CacheEntry] = []
    first: tuple[GuardedObject, ...] = ()
    memo = _Memo()
    for number in sorted(listings):
        objects, ambient = objects_of(listings[number], roles, full, memo)
        cid = f"{f.frame_ids[0]}/{number}"
        if not entries:
            first = objects
            entries.append(CacheEntry(cid, objects, ambient))
        else:
            differs = _differences(first, objects) + _ambient_changes(entries[0].ambient, ambient)
            entries.append(CacheEntry(cid, objects, ambient, differs))
    causes = Counter(_cause_text(e.causes[0]) for e in f.recompile_events)
    cause_list = tuple(f"{n}x {text}" for text, n in causes.most_common())
    hints = fix_hints(f, torch_version, era)
    return FunctionExplanation(
        function_label(f), f.name, f.file, f.line, f.compiles, f.recompiles, tuple(entries), cause_list, hints,
        len(f.failed_compiles),
    )


def _differences(first: tuple[GuardedObject, ...], other: tuple[GuardedObject, ...]) -> tuple[str, ...]:
    """What this entry pins differently from the first one, in the user's terms."""
    before = {o.name: o for o in first}
    out = []
    for o in other:
        if o.how == "identity (code)":
            continue  # which torch functions a path calls follows from the values above
        b = before.get(o.name)
        if b is None:
            out.append(f"also guards {o.name} ({o.detail})")
        elif b.pinned != o.pinned or b.detail != o.detail:
            out.append(f"{o.name}: {_pinned_text(o)}")
    names = {x.name for x in other}
    gone = [o.name for o in first if o.how != "identity (code)" and o.name not in names]
    out.extend(f"no longer guards {name}" for name in gone)
    return tuple(out)


def _ambient_changes(first: str, other: str) -> tuple[str, ...]:
    """Ambient items of an entry that the first entry did not have (``grad mode off``)."""
    known = set(first.split(", "))
    new = [item for item in other.split(", ") if item and item not in known]
    return (f"ambient: {', '.join(new)}",) if new else ()


def _pinned_text(o: GuardedObject) -> str:
    if o.how.startswith("identity"):
        return "another object (id)"
    return o.detail


def _cause_text(c: Cause) -> str:
    return f"{c.category}: {c.subject}"


# --- versions ---------------------------------------------------------------------------------

_VERSION = re.compile(r"^(\d+)\.(\d+)")


def _version_tuple(version: str | None) -> tuple[int, int] | None:
    m = _VERSION.match(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def torch_era(torch_version: str | None, guards: Iterable[Guard]) -> str:
    """How nn.Modules are guarded in the torch that wrote the log: by the version when known, else by the guards' shape."""
    v = _version_tuple(torch_version)
    if v is not None:
        return "inlined-modules" if v >= (2, 5) else "id-modules" if v >= (2, 4) else "id-modules-old"
    # One pass: a module checked by type settles it at once, the rest needs every guard.
    # torch < 2.4 prints flat guard lists; their shapes differ from the tree's (``___is_grad_enabled()``).
    flat = training = False
    for g in guards:
        kind = g.kind
        if kind == "TYPE_MATCH":
            if "._modules" in g.source or "nn.modules" in g.expr and _ROOT_SOURCE.match(g.source):
                return "inlined-modules"
        elif kind == "DYNAMIC_INDICES":
            flat = True
        elif kind in ("ID_MATCH", "EQUALS_MATCH") and g.source.endswith(".training"):
            training = True
        if not flat and "___is_grad_enabled" in g.expr:
            flat = True
    if training:
        return "id-modules-old" if flat else "id-modules"
    return "old" if flat else "unknown"


_ROOT_SOURCE = re.compile(r"^[LG]\['[^']*'\]$")


def _has_flag(torch_version: str | None, era: str, since: tuple[int, int]) -> bool | None:
    """Whether the torch that wrote the log has a config flag added in ``since``; None when it cannot be told."""
    v = _version_tuple(torch_version)
    if v is not None:
        return v >= since
    if era in ("id-modules-old", "old"):
        return False
    if era == "id-modules":
        return since <= (2, 4)
    return None


def fix_hints(f: FunctionSummary, torch_version: str | None, era: str) -> tuple[FixHint, ...]:
    """One hint per distinct cause that really recompiled, specific to the torch that wrote the log."""
    seen: dict[str, tuple[Cause, int]] = {}
    for event in f.recompile_events:
        c = event.causes[0]
        key = f"{c.category}:{readable_source(c.source)}"
        seen[key] = (seen[key][0], seen[key][1] + 1) if key in seen else (c, 1)
    hints: dict[str, FixHint] = {}
    for cause, count in seen.values():
        text, check = _hint_for(cause, torch_version, era)
        if not text:
            continue
        same = hints.get(text)
        label = _cause_text(cause) if same is None else f"{same.cause}; {_cause_text(cause)}"
        kind = "note" if text.startswith(_NOTE_PREFIXES) else "fix"
        hints[text] = FixHint(label, count + (same.count if same else 0), text, check, kind)
    return tuple(hints.values())


# Hints that describe an inherent or expected recompile rather than a change that removes it.
_NOTE_PREFIXES = ("expected", "a size of", "inherent")


def _hint_for(c: Cause, torch_version: str | None, era: str) -> tuple[str, str]:
    src = readable_source(c.source)
    if c.category == "identity" and "." not in src and era.startswith("id-modules"):
        inline = _has_flag(torch_version, era, (2, 4))
        if inline is False:
            return (
                f"this torch specializes on the id() of nn.Modules: reuse one `{src}` instance across calls, "
                "or upgrade to torch >= 2.5, which checks modules by type"
            ), ""
        return (
            f"nn.Modules are checked by id() here: set torch._dynamo.config.inline_inbuilt_nn_modules = True "
            f"(torch 2.4; the default from 2.5) so that another `{src}` instance reuses the entry, or reuse one instance"
        ), "guarddiag compare SCRIPT --flag inline_inbuilt_nn_modules=true"
    if c.category == "dynamic_shape":
        return (
            f"a size of `{src or 'a tensor'}` left the range its dynamic entry covers (sizes 0 and 1 are always specialized): "
            "expected one more entry; avoid size-1 batches (e.g. DataLoader drop_last=True) if it matters"
        ), ""
    if c.category == "tensor" and "size" in c.subject + c.text:
        return (
            f"mark the varying dimension dynamic before the first call: torch._dynamo.mark_dynamic({src or 'x'}, DIM) "
            "(sizes 0 and 1 are still specialized)"
        ), ""
    value = _VALUE.match(_as_listing_expr(c.guard))
    literal = value["val"] if value else ""
    if c.category == "value" and literal in ("True", "False", "None") or literal[:1] in ("'", '"'):
        return (
            f"inherent: `{src}` picks a code path ({literal}), one cache entry per value; keep it to a few values, "
            "or compile each path as its own function"
        ), ""
    if c.category == "value" and _is_module_attribute(c):
        has = _has_flag(torch_version, era, (2, 7))
        if has is False:
            return (
                f"this torch always specializes int attributes of nn.Modules: keep `{src}` out of the compiled code "
                "(pass it as a tensor or compute with it outside), or upgrade to torch >= 2.7 for allow_unspec_int_on_nn_module"
            ), ""
        return (
            f"set torch._dynamo.config.allow_unspec_int_on_nn_module = True so that the int `{src}` becomes a dynamic int "
            "(torch >= 2.7)"
        ), "guarddiag compare SCRIPT --flag allow_unspec_int_on_nn_module"
    if c.category == "value" and re.search(r"\b\d+\.\d+", c.text):
        return (
            f"`{src}` is a Python float baked into the graph: pass it as a tensor (torch.tensor(value)) so new values reuse the entry"
        ), ""
    if c.category == "value" and c.source.startswith("G["):
        return (
            f"`{src}` is a global read inside the compiled code, its value baked in: read it outside and pass what "
            "the code needs as an argument (a tensor for numbers)"
        ), ""
    if c.category == "value":
        return (
            f"inherent while `{src}` steers Python (a loop count, a shape, a branch): each distinct value compiles once; "
            "if it is only arithmetic, pass it as a tensor; otherwise use few distinct values, or raise "
            "torch._dynamo.config.recompile_limit so that calls past the limit stay compiled"
        ), "guarddiag compare SCRIPT --flag recompile_limit=N"
    if c.category == "container":
        return (
            f"the content of `{src}` changes between calls: pass the same keys/length every time, filling missing entries "
            "with values of the same kind (a tensor of the same dtype and requires_grad)"
        ), ""
    if c.category == "global_state":
        return f"expected: one entry per {c.subject} setting; no fix needed unless the states keep changing", ""
    return "", ""


def _is_module_attribute(c: Cause) -> bool:
    """``self.layer_idx``: an attribute of an argument or global object (not a dict item)."""
    src = c.source or ""
    return bool(re.match(r"^(?:[LG]\['[^']*'\]|[A-Za-z_]\w*)(?:\._modules\['[^']*'\])*\.\w+$", src)) and not src.startswith("G[")


def _as_listing_expr(guard: str) -> str:
    """``lr == 0.1`` (torch >= 2.6 failure text) -> ``L['lr'] == 0.1`` so the listing regexes apply."""
    return guard if guard.startswith(("L[", "G[", "___")) else re.sub(r"^([A-Za-z_]\w*)", r"L['\1']", guard)
