"""Classify guard failures into the cause taxonomy and name the object in plain words.

Pure functions over strings: torch's failure text in, :class:`~guarddiag.model.Cause` out.
The taxonomy is ``guarddiag.model.CATEGORIES``; docs/record-schema.md explains each entry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from guarddiag.model import Cause, Guard

_TENSOR = re.compile(
    r"^tensor '(?P<src>.+?)' (?P<what>size|stride|dtype|device|requires_grad|dispatch key set|rank|storage offset|layout)"
    r"[ \w]*mismatch"
)
_GLOBAL_STATE = re.compile(r"^GLOBAL_STATE changed: (?P<what>.*)$")
_ID = re.compile(r"^(?:ID_MATCH: )?___check_obj_id\((?P<src>.+?), \d+\)")
_TYPE = re.compile(r"^(?:TYPE_MATCH: )?___check_type_id\((?P<src>.+?), \d+\)")
_CONTAINER = re.compile(
    r"^(?:not )?(?:len\((?P<src1>.+?)\) *(?:==|!=)|___dict_version\((?P<src2>.+?)\)|(?:list|set)\((?P<src3>.+?)\.keys\(\)\)"
    r"|___key_to_id\((?P<src4>.+?)\)|___dict_contains\([^,]+, (?P<src5>.+?)\)|___tuple_iterator_len\((?P<src6>.+?)\))"
)
_AMBIENT = (
    (re.compile(r"___is_grad_enabled|grad_mode"), "grad mode"),
    (re.compile(r"utils_device\.CURRENT_DEVICE|default device"), "default device"),
    (re.compile(r"autocast"), "autocast state"),
    (re.compile(r"deterministic"), "deterministic algorithms"),
    (re.compile(r"torch_function_mode|___is_torch_function_enabled|torch_function"), "torch function mode"),
    (re.compile(r"___check_global_state"), "global torch state"),
)
_SHAPE = re.compile(r"\.size\(\)|\.stride\(\)|\.storage_offset\(\)|\bEq\(|\bNe\(|\b[su]\d+\b")
_VALUE = re.compile(r"^(?P<src>[^=!<>]+?) (?:==|!=|is not|is) (?P<val>.+)$")
# torch >= 2.6 prints locals bare in failure texts: `2 <= x.size()[0]`.
_BARE_SIZED = re.compile(r"\b([A-Za-z_]\w*(?:\.\w+)*)\.(?:size|stride|storage_offset)\(")
_BACKEND = re.compile(r"___check_current_backend")
_MARKING = re.compile(r"^hasattr\((?P<src>.+?), '_dynamo_\w+'\)")
_SOURCE_ANY = re.compile(r"[LG]\['[^']*'\](?:\.(?!size\(|stride\(|storage_offset\()\w+|\[[^\]]*\])*")

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b|(?<![\d.])\d{7,}\b")
_EXPECTED = re.compile(r"expected [^,]+, actual .+$|expected [^,]+$")


def normalize_guard(expr: str) -> str:
    """A form of the guard that is the same across processes: ids and sizes removed."""
    expr = _ADDRESS.sub("<id>", expr)
    return _EXPECTED.sub("expected <v>", expr).strip()


def readable_source(src: str) -> str:
    """``L['m']._modules['lin']._parameters['weight']`` -> ``m.lin.weight``."""
    s = src.strip()
    s = re.sub(r"___odict_getitem\((.+?), '([^']*)'\)", r"\1['\2']", s)
    s = re.sub(r"^[LG]\['([^']*)'\]", r"\1", s)
    s = re.sub(r"\._(?:modules|parameters|buffers)\['([^']*)'\]", r".\1", s)
    s = s.replace(".__dict__", "")
    s = re.sub(r"\.__closure__\[\d+\]\.cell_contents", "<closure>", s)
    return s


def subject(src: str, roles: Mapping[str, str] | None = None) -> str:
    """The object a guard concerns, in plain words: ```m.layer_idx` on argument `m```.

    ``roles`` (from :mod:`guarddiag.sourceinfo`) says which locals are arguments or closure variables.
    """
    if not src:
        return "the compiled frame"
    root_global = src.startswith("G[")
    name = readable_source(src)
    if root_global and name.startswith("__import_"):
        return f"torch internals (`{name}`)"
    head = re.match(r"[A-Za-z_]\w*", name)
    if head is None:
        return f"`{name}`"
    root = head.group(0)
    where = "global" if root_global else (roles or {}).get(root, "local")
    rest = name[len(root) :]
    if not rest:
        return f"{where} `{root}`"
    return f"`{name}` on {where} `{root}`"


def classify_failure(text: str, cache_entry: str | None = None, roles: Mapping[str, str] | None = None) -> Cause:
    """One torch guard-failure reason (``- 0/0: m.layer_idx == 0  # ...``) as a Cause."""
    first = text.splitlines()[0] if text else ""
    expr, _, _ = first.partition("  #")
    expr = expr.strip()
    category, src, about = _classify_expr(expr, roles)
    return Cause(
        category=category,
        source=src,
        guard=normalize_guard(expr),
        text=" ".join(first.split()),
        subject=about,
        cache_entry=cache_entry,
    )


def _classify_expr(expr: str, roles: Mapping[str, str] | None) -> tuple[str, str, str]:
    m = _GLOBAL_STATE.match(expr)
    if m is not None:
        return "global_state", "", _ambient(m["what"]) or m["what"].strip()
    m = _TENSOR.match(expr)
    if m is not None:
        return "tensor", m["src"], f"{m['what']} of tensor {subject(_as_source(m['src']), roles)}"
    m = _ID.match(expr)
    if m is not None:
        return "identity", m["src"], f"{subject(_as_source(m['src']), roles)}: a different object"
    m = _TYPE.match(expr)
    if m is not None:
        return "type", m["src"], f"{subject(_as_source(m['src']), roles)}: another type"
    m = _CONTAINER.match(expr)
    if m is not None:
        src = next(g for g in m.groups() if g)
        return "container", src, f"content of {subject(_as_source(src), roles)}"
    ambient = _ambient(expr)
    if ambient:
        return "global_state", "", ambient
    if _BACKEND.search(expr):
        return "other", "", "the compiler backend"
    m = _MARKING.match(expr)
    if m is not None:
        return "tensor", m["src"], f"dynamic-dimension marking of {subject(_as_source(m['src']), roles)}"
    if _SHAPE.search(expr) and re.search(r"<=|>=|<|>|==|!=", expr):
        srcm = _SOURCE_ANY.search(expr) or _BARE_SIZED.search(expr)
        src = srcm.group(srcm.lastindex or 0) if srcm else ""
        return "dynamic_shape", src, f"a size relation of {subject(_as_source(src), roles)}" if src else "a size relation"
    m = _VALUE.match(expr)
    if m is not None:
        src = m["src"].strip()
        return "value", src, f"value of {subject(_as_source(src), roles)}"
    srcm = _SOURCE_ANY.search(expr)
    src = srcm.group(0) if srcm else ""
    return "other", src, subject(src, roles) if src else "unclassified guard"


def _as_source(src: str) -> str:
    """Failure texts of torch >= 2.6 print ``m.layer_idx`` where listings print ``L['m'].layer_idx``."""
    if src.startswith(("L[", "G[", "___")):
        return src
    m = re.match(r"([A-Za-z_]\w*)(.*)$", src)
    return f"L['{m.group(1)}']{m.group(2)}" if m else src


def _ambient(text: str) -> str:
    return next((name for pattern, name in _AMBIENT if pattern.search(text)), "")


_KIND_CATEGORY = {
    "ID_MATCH": "identity",
    "NOT_NONE_MATCH": "identity",
    "TYPE_MATCH": "type",
    "EQUALS_MATCH": "value",
    "CONSTANT_MATCH": "value",
    "TENSOR_MATCH": "tensor",
    "DICT_KEYS": "container",
    "DICT_KEYS_MATCH": "container",
    "DICT_VERSION": "container",
    "DICT_LENGTH": "container",
    "LENGTH_CHECK": "container",
    "SEQUENCE_LENGTH": "container",
    "TUPLE_ITERATOR_LEN": "container",
    "DICT_CONTAINS": "container",
    "GLOBAL_STATE": "global_state",
    "DEFAULT_DEVICE": "global_state",
    "TORCH_FUNCTION_MODE_STACK": "global_state",
    "TORCH_FUNCTION_STATE": "global_state",
    "GRAD_MODE": "global_state",
    "SHAPE_ENV": "dynamic_shape",
}


def cause_from_changed_guard(before: Guard, after: Guard, roles: Mapping[str, str] | None = None) -> Cause:
    """Infer a cause from a guard whose expression differs between two compiles of one frame."""
    category = _KIND_CATEGORY.get(after.kind, "other")
    who = subject(after.source, roles)
    if category == "identity":
        about = f"{who}: a different object"
    elif category == "type":
        about = f"{who}: another type"
    elif category == "global_state":
        about = _global_state_change(before.expr, after.expr) or _ambient(after.expr) or "global torch state"
    elif category == "tensor":
        about = f"metadata of tensor {who}"
    elif category == "value":
        about = f"value of {who}"
    elif category == "container":
        about = f"content of {who}"
    else:
        about = who
    return Cause(
        category=category,
        source=after.source,
        guard=normalize_guard(before.expr),
        text=f"inferred: {after.kind} on {readable_source(after.source) or 'the frame'} changed "
        f"from `{_short(before.expr)}` to `{_short(after.expr)}`",
        subject=about,
    )


def _global_state_change(before: str, after: str) -> str:
    """Name the keys that differ between two ``___check_global_state() against {...}`` guards."""
    try:
        a = json.loads(before.partition(" against ")[2] or "{}")
        b = json.loads(after.partition(" against ")[2] or "{}")
    except ValueError:
        return ""
    changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return ", ".join(k.replace("_", " ") for k in changed)


def _short(expr: str, width: int = 80) -> str:
    return expr if len(expr) <= width else expr[: width - 3] + "..."
