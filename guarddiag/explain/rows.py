"""One row of the guard model: the facts of one object, told apart by how its guards check it.

A row is made from the object's facts (:class:`Node`) and what the listing says about the
others (:class:`Index`, so that no row scans the listing: issue 18). Its words are written by
:mod:`guarddiag.render.explain_words`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import NamedTuple, TypeVar

from guarddiag.explain import facts as F
from guarddiag.explain.facts import Fact
from guarddiag.explain.model import ContentObject, GuardedObject, IdentityObject, SizeGuard, TensorObject, TypeObject, ValueObject
from guarddiag.guardexpr import size_condition, size_terms
from guarddiag.guardkinds import shape_form
from guarddiag.resume import slot_index
from guarddiag.sourceinfo import Roles

# The value of an id()-checked bool on a torch that prints no type: True/False, told by the `.training` guards.
BOOL_BY_ID = "True/False (checked by id)"
_CODE_TYPES = ("module", "builtin_function_or_method", "function", "code", "method-wrapper", "wrapper_descriptor")


class Node:
    """All facts about one source, gathered before its row is made."""

    __slots__ = ("facts", "src")

    def __init__(self, src: str, facts: list[Fact] | None = None) -> None:
        self.src = src
        self.facts = facts if facts is not None else []

    def of(self, how: str) -> list[Fact]:
        return [f for f in self.facts if f.how == how]


class Index:
    """The nodes of one listing and what a row asks about the others, each map built once.

    A row must not scan every other source (``s.startswith(src + "[")`` for each object is
    quadratic in the listing: issue 18). Each map below is built on first use in one pass over the
    sources, keyed by every prefix a question can name, so a row's question is a lookup. While
    ``asked`` is a list, every question and its answer are noted in it: a row remembered by
    :class:`guarddiag.explain.objects.Memo` is reused only where the same questions get the same answers.
    """

    def __init__(
        self,
        nodes: Mapping[str, Node],
        key_steps: dict[str, tuple[tuple[str, str], ...]] | None = None,
        last_keys: tuple[tuple[str, ...], dict[str, set[str]]] | None = None,
    ) -> None:
        self.nodes = nodes
        # Each source's (prefix, key) steps, kept across the listings of one function.
        self._key_steps = key_steps if key_steps is not None else {}
        self.asked: list[tuple[str, str, object]] | None = None
        self._keys_under: dict[str, set[str]] | None = None
        # A listing's sources and their map of keys: the next listing of a function mostly has the same sources.
        self.last_keys = last_keys
        self._bool_ids: set[str] | None = None
        self._identity_parents: set[str] | None = None

    def keys_under(self, src: str) -> AbstractSet[str]:
        """The keys other sources read right under the node ``src``: ``'a'`` for ``src['a']`` and ``src['a'].b``."""
        if self._keys_under is None:
            sources = tuple(self.nodes)
            if self.last_keys is not None and self.last_keys[0] == sources:
                self._keys_under = self.last_keys[1]
                return self._note("keys_under", src, self._keys_under.get(src, _NO_KEYS))
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
            self.last_keys = (sources, index)
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
        m = F.KEY_STEP.match(s, p)
        if m is not None:
            out.append((s[:p], m.group(1)))
        p = s.find("[", p + 1)
    return tuple(out)


_T = TypeVar("_T")
_NO_KEYS: frozenset[str] = frozenset()


def row(node: Node, index: Index, roles: Mapping[str, str]) -> GuardedObject | None:
    """The row of one object, ``None`` when it has none (shape guards folded into their tensor, nothing a user changes)."""
    if node.of("shape") and not node.of("tensor"):
        return None  # folded into its tensor by objects.attach_shapes
    src = node.src
    who = _who(src, roles)
    tensor = node.of("tensor")
    if tensor:
        return _tensor_row(who, src, tensor[0], node.of("shape"))
    ident, typ, value = node.of("identity"), node.of("type"), node.of("value")
    if value:
        return _value(who, src, value[0].value)
    if ident:
        return _identity_row(who, src, ident[0], index)
    keys = node.of("key") + node.of("keys") + node.of("length")
    if keys:
        return _content_row(who, src, node, typ)
    if typ or node.of("dynamic_scalar"):
        return _type_row(who, src, typ[0] if typ else Fact(src, "type"), node, index)
    sub = node.of("submodule_key") + node.of("submodule_keys")
    if sub:
        return _content_row(who, src, node, typ)
    return None


class _Who(NamedTuple):
    name: str
    role: str
    root: str


# The role of a stack slot whose expression the source does not tell (see guarddiag.resume).
STACK_VALUE = "stack value"


def _who(src: str, roles: Mapping[str, str]) -> _Who:
    """An object's name, its root's role and its root; a resume function's stack slot by the expression
    it holds (``self.block(x)`` for ``___stack1``), where the source tells it."""
    name, root = F.user_name(src), F.root(src)
    index = slot_index(root)
    if index is None or src.startswith("G["):
        return _Who(name, F.role(src, roles), root)
    held = roles.held if isinstance(roles, Roles) else ()
    if index < len(held) and held[index]:
        return _Who(held[index] + name[len(root) :], F.role(src, roles), root)
    return _Who(name, STACK_VALUE, root)


def _tensor_row(who: _Who, src: str, fact: Fact, shapes: list[Fact]) -> TensorObject:
    sizes = tuple(s.strip() for s in fact.extra["size"].split(",") if s.strip())
    dynamic = [i for i, s in enumerate(sizes) if s == "None"]
    shown = "[" + ", ".join("*" if s == "None" else s for s in sizes) + "]"
    rg = fact.extra["requires_grad"]
    return TensorObject(
        who.name,
        who.role,
        who.root,
        "tensor metadata" + (" (dynamic dims)" if dynamic else ""),
        (src,),
        f"{fact.extra['dtype']} {shown} {rg}",
        fact.extra["dtype"],
        sizes,
        rg,
        _size_guards(src, shapes) if dynamic else (),
    )


def _size_guards(src: str, shapes: list[Fact]) -> tuple[SizeGuard, ...]:
    """The entry's symbolic-size guards that read this tensor's sizes (or strides), each once, as torch listed them."""
    found: dict[str, SizeGuard] = {}
    for s in shapes:
        terms = size_terms(s.value)
        mine = [t for t in terms if t["src"] == src]
        if not mine:
            continue
        condition = size_condition(s.value)
        dims = tuple(sorted({int(t["dim"]) for t in mine if t["what"] == "size" and t["dim"] is not None}))
        others = any(t["src"] != src for t in terms)
        where = s.extra.get("location", "")
        # `(_inductor/codegen/cpp.py:2273 in need_use_acc_helper)` alone: torch's own line, no user code.
        origin = where[1:-1] if where.startswith("(") and where.endswith(")") else ""
        found.setdefault(condition, SizeGuard(shape_form(condition), condition, dims, others, "" if origin else where, origin))
    return tuple(found.values())


def _value(who: _Who, src: str, value: str) -> ValueObject:
    return ValueObject(who.name, who.role, who.root, "value", (src,), value, value)


def _identity_row(who: _Who, src: str, fact: Fact, index: Index) -> GuardedObject:
    typ = fact.extra.get("type", "")
    # A builtin the code uses (`isinstance(x, bool)`): torch prints `type=<class 'bool'>` for the class
    # bool itself, which is no True/False value and no user object either.
    if F.BUILTIN.match(src):
        return IdentityObject(who.name, who.role, who.root, "identity (code)", (src,), fact.value, F.short_type(typ))
    # Old torch prints no type; True/False are singletons whose ids the `.training` guards reveal.
    if typ in F.SINGLETONS or who.name.endswith(".training") or fact.value in index.bool_ids():
        return _value(who, src, BOOL_BY_ID)
    how = "identity (code)" if _is_code(src, typ, index) else "identity"
    return IdentityObject(who.name, who.role, who.root, how, (src,), fact.value, F.short_type(typ))


def _is_code(src: str, typ: str, index: Index) -> bool:
    """A module or function the code calls (``torch.tanh``), as opposed to a user object checked by id()."""
    if F.BUILTIN.match(src) or src.endswith(".__code__"):
        return True
    if typ:
        return typ in _CODE_TYPES
    # Old torch prints no type: a global attribute chain (``G['torch'].tanh``), or a global with such children.
    chained = src.startswith("G[") and not F.GLOBAL_NAME.fullmatch(src)
    return chained or (src.startswith("G[") and index.has_identity_child(src))


def _type_row(who: _Who, src: str, fact: Fact, node: Node, index: Index) -> TypeObject:
    typ = F.short_type(fact.extra.get("type", "")) or "object"
    if node.of("dynamic_scalar"):
        return TypeObject(who.name, who.role, who.root, "type (dynamic value)", (src,), "", typ, dynamic=True)
    sub = sorted(node.of("submodule_key"), key=lambda f: int(f.extra["index"])) + node.of("submodule_keys")
    return TypeObject(
        who.name,
        who.role,
        who.root,
        "type",
        (src,),
        "",
        typ,
        submodules=tuple(f.value for f in sub),
        read_keys=tuple(sorted(index.keys_under(src))),
    )


def _content_row(who: _Who, src: str, node: Node, typ: list[Fact]) -> ContentObject:
    keys_at = sorted(node.of("key") + node.of("submodule_key"), key=lambda f: int(f.extra["index"]))
    key_sets = node.of("keys") + node.of("submodule_keys")
    if keys_at:
        keys = tuple(f.value for f in keys_at)
        return ContentObject(
            who.name, who.role, who.root, "content (keys in order)", (src,), ", ".join(keys),
            keys=keys, submodules=bool(node.of("submodule_key")),
        )
    if key_sets:
        return ContentObject(who.name, who.role, who.root, "content (key set)", (src,), key_sets[0].value, key_set=key_sets[0].value)
    length = node.of("length")
    n = length[0].value
    kind = F.short_type(typ[0].extra.get("type", "")) if typ else ""
    kind = kind or ("dict" if length[0].extra.get("dict") else "")
    return ContentObject(who.name, who.role, who.root, "content (length)", (src,), n, length=n, type=kind)
