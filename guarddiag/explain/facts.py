"""Reading guards into facts: every guard-expression pattern explain knows, in one place.

A guard of a listing is read into a :class:`Fact` (which object, how it is checked, the value it
pins); sources are named in the user's terms (:func:`user_name`). The guarded-object pattern, the
ambient kinds and the listing spelling come from the shared reader (guarddiag.guardexpr,
guarddiag.guardkinds); the patterns here read the values a listing pins, which only explain needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from guarddiag.guardexpr import readable_source, source_group
from guarddiag.guardkinds import AMBIENT_KINDS
from guarddiag.logparse.guards import location_of
from guarddiag.model import Guard

_SRC = source_group("src")
_TENSOR = re.compile(
    r"^check_tensor\(" + _SRC + r", (?P<cls>\w+), DispatchKeySet\([^)]*\), (?P<dtype>torch\.\w+), device=(?P<device>[^,]+), "
    r"requires_grad=(?P<rg>\w+), size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]\)"
)
_ID = re.compile(r"^___check_obj_id\(" + _SRC + r", (?P<id>\d+)\)(?:, type=<class '(?P<type>[^']+)'>)?")
_TYPE = re.compile(r"^___check_type_id\(" + _SRC + r", (?P<id>\d+)\)(?:, type=<class '(?P<type>[^']+)'>)?")
_SRC2 = source_group("src2")
_KEY_AT = re.compile(r"^list\((?:dict\.keys\(" + _SRC + r"\)|" + _SRC2 + r"\.keys\(\))\)\[(?P<i>\d+)\] == (?P<key>.+)$")
_KEY_SET = re.compile(r"^(?:set\(" + _SRC + r"\.keys\(\)\) == \{(?P<keys>.*)\}|___key_to_id\(" + _SRC2 + r"\) == \[(?P<keys2>.*)\])$")
_LEN = re.compile(r"^len\(" + _SRC + r"\) == (?P<n>\d+)$")
# An empty container: torch 2.13 prints ``not G['m'].inputs`` for a length of 0.
_EMPTY = re.compile(r"^not " + _SRC + r"$")
_CONTAINS = re.compile(r"^(?P<neg>not )?___dict_contains\((?P<key>'[^']*'), " + _SRC + r"\)$")
_MARKING = re.compile(r"^hasattr\(" + _SRC + r", '_dynamo_\w+'\) == False$")
_ISNAN = re.compile(r"^not math\.isnan\(" + _SRC + r"\)$")
# An unspecialized (dynamic) int: only its range is guarded, e.g. ``-9223372036854775808 <= L['self'].layer_idx``.
_SCALAR_RANGE = re.compile(r"^(?:-?\d+ <= " + _SRC + r"|" + _SRC2 + r" <= -?\d+)$")
VALUE = re.compile(r"^" + _SRC + r" (?P<op>==|is not|is|!=) (?P<val>.+)$")
SIZE_TERM = re.compile(r"(?P<src>[LG]\[[^\]]+\](?:\.\w+|\[[^\]]+\])*?)\.(?P<what>size|stride)\(\)\[(?P<dim>\d+)\]")
_CODE_LINE = re.compile(r"^(?:def |return\b|if not |_var\d|Python shape guard function|\w+ = )")
# torch's own modules and the builtins dict: a user's module reached the same way (``__import___main__``) is the user's.
INTERNAL_GLOBAL = re.compile(r"^G\['__(?:import_torch\b|import_torch_dot_|builtins_dict)")
_IMPORTED = re.compile(r"^__import_(?P<module>\w+?)(?=\.|$)")
MODULE_INTERNALS = re.compile(r"\.(?:_modules|_parameters|_buffers|__dict__)$")
BUILTIN = re.compile(r"^G\['__builtins_dict___\d+'\]\['(?P<name>\w+)'\]$")
SINGLETONS = ("builtins.bool", "bool", "NoneType", "builtins.NoneType")
ROOT_SOURCE = re.compile(r"^[LG]\['[^']*'\]$")
KEY_STEP = re.compile(r"\[('[^']*'|\d+)\]")
PARAM = re.compile(r"\._(?:parameters|buffers)\['[^']*'\]$")
SUBMODULE = re.compile(r"\._modules\['[^']*'\]$")
SUBMODULE_ATTR = re.compile(r"\._modules\['[^']*'\]\.(?P<attr>\w+)$")
GLOBAL_NAME = re.compile(r"G\['[^']*'\]")
# An attribute of an argument or global object (``self.layer_idx``), as a cause's source names it.
MODULE_ATTRIBUTE = re.compile(r"^(?:[LG]\['[^']*'\]|[A-Za-z_]\w*)(?:\._modules\['[^']*'\])*\.\w+$")
FLOAT_LITERAL = re.compile(r"\b\d+\.\d+")
_ROOT_NAME = re.compile(r"[LG]\['([^']*)'\]")


_NO_EXTRA: Mapping[str, str] = MappingProxyType({})


class Fact(NamedTuple):
    """One guard, read: the object it checks, how, and the value it pins (a tuple: one is made per distinct guard)."""

    source: str
    how: str
    value: str = ""
    extra: Mapping[str, str] = MappingProxyType({})


class Ambient(NamedTuple):
    """A piece of global state a cache entry checks (render/explain_words.ambient_words says it).

    ``kind``: the guard kind of the table (``GRAD_MODE``, ``DEFAULT_DEVICE``...), or ``SAVED_TENSOR_HOOKS``,
    ``MODULE_GLOBAL_HOOKS``, ``TORCH_INTERNALS`` (guards on torch's own globals); ``state``: what a
    ``GLOBAL_STATE`` guard shows of it (``snapshot``: torch's JSON of the state, ``grad``, ``deterministic``,
    ``torch_function``; ``""``: it does not say); ``grad``: grad mode on or off, where torch prints it."""

    kind: str
    state: str = ""
    grad: bool | None = None


def read_guard(g: Guard) -> Fact | None:
    """The fact a guard states, ``None`` for guard-function source lines and hooks torch adds for itself.
    Global state is ``how="ambient"``: :func:`ambient_of` reads it."""
    expr = g.expr.strip()
    if g.kind in AMBIENT_KINDS or "top_saved_tensors_hooks" in expr:
        return Fact("", "ambient")
    if not expr or _CODE_LINE.match(expr):
        return None
    # A size term always holds ".size()[" or ".stride()[": most guards need no search for one.
    if (".size()[" in expr or ".stride()[" in expr) and not expr.startswith(("check_tensor(", "hasattr(")):
        size = SIZE_TERM.search(expr)
        if size is not None:
            where = g.location or (location_of(g.comment) if g.comment else "")
            return Fact(size["src"], "shape", expr, {"location": where} if where else _NO_EXTRA)
    for starts, pattern, make in _READERS:
        if expr.startswith(starts):
            m = pattern.match(expr)
            if m is not None:
                return make(m, g)
    m = VALUE.match(expr)
    if m is not None and m["val"].startswith(("G[", "L[")):
        return None  # two names for one object (``G['F'] is G['__import_...'].F``): nothing a user changes
    if m is not None:
        return Fact(m["src"], "value", m["val"] if m["op"] == "==" else f"{m['op']} {m['val']}")
    return Fact(g.source, "other", expr) if g.source else None


def _tensor_fact(m: re.Match[str], g: Guard) -> Fact:
    return Fact(
        m["src"],
        "tensor",
        f"{m['dtype']} {m['size']} {m['rg']} {m['device']}",
        {"cls": m["cls"], "dtype": m["dtype"].removeprefix("torch."), "size": m["size"], "requires_grad": m["rg"], "device": m["device"]},
    )


def _either(first: str | None, second: str) -> str:
    return first if first is not None else second


def _empty_fact(m: re.Match[str], g: Guard) -> Fact:
    """``not L['xs']``: an empty list (a dict's emptiness, module hooks among them, stays unread as before)."""
    return Fact(m["src"], "length", "0") if g.kind == "LENGTH_CHECK" else Fact(g.source, "other", m[0])


def _contains_fact(m: re.Match[str], g: Guard) -> Fact:
    return Fact(m["src"], "contains", m["key"], {"negated": "1" if m["neg"] else ""})


_SOURCE_START = ("L[", "G[", "___odict_getitem(")
# Each reader with the text every expression it matches starts with (so a guard tries only the
# reader its first word names: no expression matches two of them), tried in order.
_READERS: tuple[tuple[tuple[str, ...], re.Pattern[str], Callable[[re.Match[str], Guard], Fact]], ...] = (
    (("check_tensor(",), _TENSOR, _tensor_fact),
    (("___check_obj_id(",), _ID, lambda m, g: Fact(m["src"], "identity", m["id"], {"type": m["type"] or ""})),
    (("___check_type_id(",), _TYPE, lambda m, g: Fact(m["src"], "type", m["id"], {"type": m["type"] or ""})),
    (("list(",), _KEY_AT, lambda m, g: Fact(m["src"] or m["src2"], "key", m["key"], {"index": m["i"]})),
    (("set(", "___key_to_id("), _KEY_SET, lambda m, g: Fact(m["src"] or m["src2"], "keys", _either(m["keys"], m["keys2"]))),
    (("len(",), _LEN, lambda m, g: Fact(m["src"], "length", m["n"], {"dict": "1" if g.kind == "DICT_LENGTH" else ""})),
    (("___dict_contains(", "not ___dict_contains("), _CONTAINS, _contains_fact),
    (("not L[", "not G["), _EMPTY, lambda m, g: _empty_fact(m, g)),
    (("hasattr(",), _MARKING, lambda m, g: Fact(m["src"], "marking")),
    (("not math.isnan(",), _ISNAN, lambda m, g: Fact(m["src"], "dynamic_scalar")),
    (("-", *"0123456789", *_SOURCE_START), _SCALAR_RANGE, lambda m, g: Fact(m["src"] or m["src2"], "dynamic_scalar")),
)


def ambient_of(g: Guard) -> Ambient:
    """The global state a guard of ``how="ambient"`` checks, read off the guard where torch prints it."""
    expr = g.expr
    if g.kind not in AMBIENT_KINDS:
        return Ambient("SAVED_TENSOR_HOOKS")
    if g.kind != "GLOBAL_STATE":
        return Ambient(g.kind)
    state = expr.partition(" against ")[2]
    if state:
        try:
            grad = json.loads(state).get("grad_mode")
        except ValueError:
            grad = None
        if grad is not None:
            return Ambient(g.kind, "snapshot", bool(grad))
    if "___is_grad_enabled" in expr:
        return Ambient(g.kind, "grad", not expr.startswith("not "))
    if "deterministic" in expr:
        return Ambient(g.kind, "deterministic")
    if "torch_function" in expr:
        return Ambient(g.kind, "torch_function")
    return Ambient(g.kind)


def user_name(src: str) -> str:
    """``L['m']._modules['lin']._parameters['weight']`` -> ``m.lin.weight``; builtins by their name."""
    m = BUILTIN.match(src)
    if m is not None:
        return m["name"]
    name = readable_source(src).removesuffix(".__code__")
    imported = _IMPORTED.match(name) if name.startswith("__import_") else None
    if imported is not None:
        # A module torch imported for the frame: the script's own globals (``__main__``) by their name.
        module = imported["module"].replace("_dot_", ".")
        rest = name[imported.end() :].removeprefix(".")
        return rest if module == "__main__" and rest else f"{module}.{rest}" if rest else module
    return name


def root(src: str) -> str:
    """The frame's name an object is reached from: ``m`` for ``L['m']._modules['lin']``."""
    m = _ROOT_NAME.match(src.removeprefix("___odict_getitem("))
    return m.group(1) if m else ""


def role(src: str, roles: Mapping[str, str]) -> str:
    """``global``, or the role of the local the object is reached from (``argument``, ``closure variable``...)."""
    if src.startswith(("G[", "___odict_getitem(G[")):
        return "global"
    return roles.get(root(src), "local")


def short_type(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1] if qualname else ""
