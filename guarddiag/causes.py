"""Classify guard failures into the cause taxonomy: the kind, the guarded object, the property, as facts.

Pure functions over strings: torch's failure text in, :class:`~guarddiag.model.Cause` out (render/words.py
says it in words).
Which expression is which kind, and so which category, is the table in :mod:`guarddiag.guardkinds`;
docs/record-schema.md explains each category.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from guarddiag.guardexpr import (
    as_source,
    key_pin,
    named_source,
    normalize_guard,
    readable_source,
    size_condition,
    sized_source,
    tensor_change,
    tensor_fields,
)
from guarddiag.guardkinds import Category, GuardKind, ambient_state, failure_kind, kind, shape_form, torch_hint
from guarddiag.ids import CACHE_ENTRY, CompileId
from guarddiag.logparse.events import StackFrame
from guarddiag.logparse.guards import location_of
from guarddiag.model import Cause, DictKeys, Guard, Inferred, Source
from guarddiag.places import location_file, users_file
from guarddiag.resume import slot_index, slot_name
from guarddiag.sourceinfo import ARGUMENT, CLOSURE, LOCAL, Roles

__all__ = ["cause_from_changed_guard", "classify_failure", "classify_last_reason", "guarded_source", "keys_cause"]


def guarded_source(src: str, roles: Mapping[str, str] | None = None) -> Source:
    """The object torch names ``src`` (``L['m'].layer_idx``) as facts: its root, the root's role, the path below it.

    ``roles`` (from :mod:`guarddiag.sourceinfo`) says which locals are arguments or closure variables.
    """
    if not src:
        return Source()
    root_global = src.startswith("G[")
    name = readable_source(src)
    if root_global and name.startswith("__import_"):
        return _imported(name)
    head = re.match(r"[A-Za-z_]\w*", name)
    if head is None:
        return Source(name, "expression")
    root = head.group(0)
    index = None if root_global else slot_index(root)
    if index is not None:
        return _held(index, name[len(root) :], roles)
    role = "global" if root_global else _ROLE.get((roles or {}).get(root, LOCAL), "local")
    return Source(root, role, name[len(root) :])


# sourceinfo's roles of a local name -> Source.role.
_ROLE = {ARGUMENT: "argument", CLOSURE: "closure", LOCAL: "local"}


def _held(index: int, rest: str, roles: Mapping[str, str] | None) -> Source:
    """A value a graph break left on the stack: the user's code that computed it where the source tells,
    and the line of the break."""
    held = roles.held if isinstance(roles, Roles) else ()
    line = roles.line if isinstance(roles, Roles) else None
    return Source(slot_name(index), "stack", rest, held=held[index] if index < len(held) else "", line=line)


def _imported(name: str) -> Source:
    """A global reached through a module torch imported for the frame: ``__import___main__.activations``
    is the script's own global `activations`; ``__import_torch_dot_nn...`` is torch's."""
    module, _, rest = name.removeprefix("__import_").partition(".")
    module = module.replace("_dot_", ".")
    if module == "torch" or module.startswith("torch."):
        return Source(name, "torch")
    return Source(rest, "module_global", module=module) if rest else Source(module, "module")


def classify_failure(
    text: str, cache_entry: CompileId | None = None, roles: Mapping[str, str] | None = None, stack: Sequence[StackFrame] = ()
) -> Cause:
    """One torch guard-failure reason (``- 0/0: m.layer_idx == 0  # ...``) as a Cause; ``stack``: the
    ``User stack trace:`` torch printed under it (torch >= 2.11), which places it at the user's line."""
    lines = text.splitlines() if text else [""]
    # A reason that ends with a colon goes on below it (`Duplicate tensors found:` and the list on the next lines).
    first = " ".join(text.split()) if lines[0].rstrip().endswith(":") else lines[0]
    expr, _, comment = first.partition("  #")
    expr = expr.strip()
    # A size range names two lines, its lower bound's and its upper bound's: ``code  # file:1 in f (...) and
    # code  # file:2 in f (...)``. The upper bound's is the user's (the lower is often torch's 0/1 specialization).
    head, joined, tail = comment.rpartition(") and ")
    if joined and "  # " in tail:
        comment = " " + tail
    facts = _classify_expr(expr, roles)
    location = location_of(comment) if comment else ""
    # `code  # file:line in fn`; a flattened paste has single spaces around the second `#`.
    at = comment.rfind(location) if location else -1
    code = comment[:at].rstrip().removesuffix("#").strip() if at > 0 else ""
    location, code, inner, inner_code = users_line(location, " ".join(code.split()) if location else "", stack)
    shaped = facts.category == Category.DYNAMIC_SHAPE
    condition = size_condition(expr) if shaped else ""
    return replace(
        facts,
        guard=normalize_guard(expr),
        text=" ".join(first.split()),
        cache_entry=cache_entry,
        location=location,
        code=code,
        inner_location=inner,
        inner_code=inner_code,
        shape=shape_form(condition) if shaped else "",
        condition=condition,
        torch_hint=torch_hint(comment),
    )


def users_line(location: str, code: str, stack: Sequence[StackFrame] = ()) -> tuple[str, str, str, str]:
    """Where a guard came from: ``(location, code)`` of the user's line and ``(inner_location, inner_code)``
    of torch's innermost line when that is not the user's and the user's is not known. The user's line
    is the innermost frame of ``stack`` in the user's code, else the guard's comment (``location``, the
    innermost frame torch names) unless that is torch's or a library's."""
    for frame in reversed(stack):
        if users_file(frame.file):
            if location.endswith(f":{frame.line} in {frame.function}") and frame.file.replace("\\", "/").endswith(location_file(location)):
                return location, code, "", ""  # the comment names this frame too, its file shortened as torch does
            return f"{frame.file}:{frame.line} in {frame.function}", " ".join(frame.code.split()), "", ""
    if stack and not location:
        last = stack[-1]
        location, code = f"{last.file}:{last.line} in {last.function}", " ".join(last.code.split())
    if not location:
        return "", "", "", ""
    if stack or not users_file(location_file(location), shortened=True):
        return "", "", location, code
    return location, code, "", ""


def classify_last_reason(last_reason: str, roles: Mapping[str, str] | None = None) -> Cause | None:
    """A limit warning's ``last reason: 0/1: mode == 'bb'  # ...`` classified like a recompile's cause;
    None when torch names no reason."""
    text = last_reason.strip()
    if not text or text.startswith("Unable to find recompilation reasons"):
        return None
    m = _CACHE_ENTRY.match(text)
    entry, text = (CompileId.parse(m["ce"]), text[m.end() :]) if m else (None, text)
    return classify_failure(text, entry, roles)


_CACHE_ENTRY = re.compile(rf"^(?P<ce>{CACHE_ENTRY}): ")


def _classify_expr(expr: str, roles: Mapping[str, str] | None) -> Cause:
    """The facts of a failure text's expression (kind, category, object, property, dim): the first row of
    the kind table whose failure spelling it matches. Its text and guard are the caller's."""
    found = failure_kind(expr)
    if found is None:
        src = named_source(expr)
        return Cause(Category.OTHER, src, "", "", guarded=guarded_source(src, roles) if src else None)
    row, m = found
    groups = m.groupdict()
    if row.category is Category.GLOBAL_STATE:
        return Cause(row.category, "", "", "", row.name, checked=ambient_state(expr) or (groups.get("what") or "").strip())
    src = (groups.get("src") or (sized_source(expr) if row.category is Category.DYNAMIC_SHAPE else "")).strip()
    if row.category is Category.ALIASING:
        return _aliasing(row, src, groups.get("other") or "", roles)
    guarded = guarded_source(as_source(src), roles) if src else None
    if row.category is Category.DYNAMIC_SHAPE:
        # Each symbolic-size guard is a cause of its own: its condition names it (``x.size(1) % 8 == 0``).
        return Cause(row.category, src, "", "", row.name, guarded, checked=size_condition(expr))
    # One tensor's dims change independently (a batch dim, a sequence dim): each is its own cause.
    dim = int(groups["dim"]) if groups.get("dim") else None
    return Cause(row.category, src, "", "", row.name, guarded, checked=groups.get("what") or "", dim=dim)


def _names(listed: str) -> list[str]:
    """``["feats[1]", "feats[2]"]`` (torch's JSON list of the aliased sources) -> the names."""
    try:
        names = json.loads(listed)
    except ValueError:
        names = listed.strip("[]").split(", ")
    return [str(n).strip() for n in names if str(n).strip()] if isinstance(names, list) else [str(names)]


def _aliasing(row: GuardKind, src: str, other: str, roles: Mapping[str, str] | None) -> Cause:
    """``Duplicate tensors found: ["feats[1]", "feats[2]"]`` or ``a is b``: the objects, together."""
    names = [src, other] if other else _names(src)
    if not names:
        return Cause(row.category, "", "", "", row.name)
    aliased = tuple(readable_source(as_source(n)) for n in names)
    first = as_source(names[0])
    return Cause(row.category, first, "", "", row.name, guarded_source(first, roles), aliased=aliased)


def keys_cause(cause: Cause, keys: DictKeys, roles: Mapping[str, str] | None = None) -> Cause:
    """A container cause on a dict (``len(d) != 2``: torch checks the length first) as the change of its keys
    it is, with the keys the listings tell."""
    return replace(cause, kind="DICT_KEYS", guarded=guarded_source(as_source(cause.source), roles), keys=keys)


def cause_from_changed_guard(before: Guard, after: Guard, roles: Mapping[str, str] | None = None, what: str = "") -> Cause:
    """Infer a cause from a guard whose expression differs between two compiles of one frame; ``what``
    changed in it when the caller knows (``size at dim 0``: the two expressions are then one)."""
    row = kind(after.kind)
    pin = key_pin(after.expr)
    if pin is not None:
        # Another key at one index of a dict (or another key list): a change of the dict's keys.
        was, now = key_pin(before.expr), pin
        known = was is not None and was.index is None and now.index is None
        keys = DictKeys(was.keys, now.keys, now.ordered) if known and was is not None else None
        return Cause(
            category=Category.CONTAINER,
            source=now.source,
            guard=normalize_guard(before.expr),
            text="",
            kind="DICT_KEYS",
            guarded=guarded_source(now.source, roles),
            keys=keys,
            inferred=Inferred(before.expr, after.expr),
        )
    if row.category is Category.GLOBAL_STATE:
        checked, dim = _global_state_change(before.expr, after.expr) or ambient_state(after.expr) or "global torch state", None
    else:
        # A tensor's changed fields when the two checks tell them: "size of tensor `x` at dim 0", as
        # torch's own failure text reads; else "metadata of tensor `x`".
        checked = what or tensor_change(tensor_fields(before.expr), tensor_fields(after.expr)) or "metadata"
        dim = None
        if checked.startswith("size at dim ") and "," not in checked:
            checked, dim = "size", int(checked.rpartition(" ")[2])
    return Cause(
        category=row.category,
        source=after.source,
        guard=normalize_guard(before.expr),
        text="",
        kind=after.kind,
        guarded=None if row.category is Category.GLOBAL_STATE else guarded_source(after.source, roles),
        checked=checked,
        dim=dim,
        inferred=Inferred(before.expr, after.expr, after.kind),
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
