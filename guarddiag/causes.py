"""Classify guard failures into the cause taxonomy and name the object in plain words.

Pure functions over strings: torch's failure text in, :class:`~guarddiag.model.Cause` out.
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
from guarddiag.ids import CACHE_ENTRY
from guarddiag.logparse.events import StackFrame
from guarddiag.logparse.guards import location_of
from guarddiag.model import Cause, DictKeys, Guard
from guarddiag.places import location_file, users_file
from guarddiag.resume import slot_index, slot_name
from guarddiag.sourceinfo import Roles

__all__ = ["cause_from_changed_guard", "classify_failure", "classify_last_reason", "keys_cause", "subject"]


def subject(src: str, roles: Mapping[str, str] | None = None) -> str:
    """The object a guard concerns, in plain words: ```m.layer_idx` on argument `m```.

    ``roles`` (from :mod:`guarddiag.sourceinfo`) says which locals are arguments or closure variables.
    """
    if not src:
        return "the compiled frame"
    root_global = src.startswith("G[")
    name = readable_source(src)
    if root_global and name.startswith("__import_"):
        return _imported(name)
    head = re.match(r"[A-Za-z_]\w*", name)
    if head is None:
        return f"`{name}`"
    root = head.group(0)
    index = None if root_global else slot_index(root)
    if index is not None:
        return _held(index, name[len(root) :], roles)
    where = "global" if root_global else (roles or {}).get(root, "local")
    rest = name[len(root) :]
    if not rest:
        return f"{where} `{root}`"
    return f"`{name}` on {where} `{root}`"


def _held(index: int, rest: str, roles: Mapping[str, str] | None) -> str:
    """A value a graph break left on the stack, by the user's code that computed it: ```self.block(x)```;
    where the source does not tell, by torch's name and the line of the break."""
    held = roles.held if isinstance(roles, Roles) else ()
    if index < len(held) and held[index]:
        return f"`{held[index]}{rest}`"
    line = roles.line if isinstance(roles, Roles) else None
    at = f" at line {line}" if line is not None else ""
    return f"`{slot_name(index)}{rest}` (a value the graph break{at} left on the stack)"


def _imported(name: str) -> str:
    """A global reached through a module torch imported for the frame: ``__import___main__.activations``
    is the script's own global `activations`; ``__import_torch_dot_nn...`` is torch's."""
    module, _, rest = name.removeprefix("__import_").partition(".")
    module = module.replace("_dot_", ".")
    if module == "torch" or module.startswith("torch."):
        return f"torch internals (`{name}`)"
    where = "the script" if module == "__main__" else f"module `{module}`"
    return f"global `{rest}` of {where}" if rest else f"module `{module}`"


def classify_failure(
    text: str, cache_entry: str | None = None, roles: Mapping[str, str] | None = None, stack: Sequence[StackFrame] = ()
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
    category, src, about = _classify_expr(expr, roles)
    location = location_of(comment) if comment else ""
    # `code  # file:line in fn`; a flattened paste has single spaces around the second `#`.
    at = comment.rfind(location) if location else -1
    code = comment[:at].rstrip().removesuffix("#").strip() if at > 0 else ""
    location, code, inner, inner_code = users_line(location, " ".join(code.split()) if location else "", stack)
    shaped = category == Category.DYNAMIC_SHAPE
    condition = size_condition(expr) if shaped else ""
    return Cause(
        category=category,
        source=src,
        guard=normalize_guard(expr),
        text=" ".join(first.split()),
        subject=about,
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
    entry, text = (m["ce"], text[m.end() :]) if m else (None, text)
    return classify_failure(text, entry, roles)


_CACHE_ENTRY = re.compile(rf"^(?P<ce>{CACHE_ENTRY}): ")


def _classify_expr(expr: str, roles: Mapping[str, str] | None) -> tuple[str, str, str]:
    """Category, source and subject of a failure text's expression: the first row of the kind table
    whose failure spelling it matches."""
    found = failure_kind(expr)
    if found is None:
        src = named_source(expr)
        return Category.OTHER, src, subject(src, roles) if src else "unclassified guard"
    row, m = found
    groups = m.groupdict()
    if row.category is Category.GLOBAL_STATE:
        return row.category, "", ambient_state(expr) or (groups.get("what") or "").strip()
    src = (groups.get("src") or (sized_source(expr) if row.category is Category.DYNAMIC_SHAPE else "")).strip()
    if row.category is Category.DYNAMIC_SHAPE:
        # Each symbolic-size guard is a cause of its own: its condition names it (``x.size(1) % 8 == 0``).
        return row.category, src, row.about.format(who=subject(as_source(src), roles) if src else "", what=size_condition(expr))
    if row.category is Category.ALIASING:
        return _aliasing(row, src, groups.get("other") or "", roles)
    about = _about(row, src, groups.get("what") or "", roles)
    if groups.get("dim"):
        # One tensor's dims change independently (a batch dim, a sequence dim): each is its own cause.
        about += f" at dim {groups['dim']}"
    return row.category, src, about


def _about(row: GuardKind, src: str, what: str, roles: Mapping[str, str] | None) -> str:
    """The row's words for the object (``value of `n```); a relation of sizes alone (``Eq(s0, 3)``)
    names no object."""
    if not src:
        return row.about.partition(" of {who}")[0]
    return row.about.format(who=subject(as_source(src), roles), what=what)


def _names(listed: str) -> list[str]:
    """``["feats[1]", "feats[2]"]`` (torch's JSON list of the aliased sources) -> the names."""
    try:
        names = json.loads(listed)
    except ValueError:
        names = listed.strip("[]").split(", ")
    return [str(n).strip() for n in names if str(n).strip()] if isinstance(names, list) else [str(names)]


def _aliasing(row: GuardKind, src: str, other: str, roles: Mapping[str, str] | None) -> tuple[str, str, str]:
    """``Duplicate tensors found: ["feats[1]", "feats[2]"]`` or ``a is b``: the objects, named together."""
    names = [src, other] if other else _names(src)
    if not names:
        return row.category, "", row.about.format(who="tensor inputs")
    who = " and ".join(f"`{readable_source(as_source(n))}`" for n in names)
    return row.category, as_source(names[0]), row.about.format(who=who)


def keys_cause(cause: Cause, keys: DictKeys, roles: Mapping[str, str] | None = None) -> Cause:
    """A container cause on a dict (``len(d) != 2``: torch checks the length first) as the change of its keys
    it is, with the keys the listings tell."""
    src = as_source(cause.source)
    return replace(cause, subject=kind("DICT_KEYS").about.format(who=subject(src, roles)), keys=keys)


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
            text=f"inferred: the keys of {readable_source(now.source)} changed from `{_short(before.expr)}` to `{_short(after.expr)}`",
            subject=kind("DICT_KEYS").about.format(who=subject(now.source, roles)),
            keys=keys,
        )
    if row.category is Category.GLOBAL_STATE:
        about = _global_state_change(before.expr, after.expr) or ambient_state(after.expr) or "global torch state"
    else:
        # A tensor's changed fields when the two checks tell them: "size of tensor `x` at dim 0", as
        # torch's own failure text reads; else "metadata of tensor `x`".
        what = what or tensor_change(tensor_fields(before.expr), tensor_fields(after.expr)) or "metadata"
        at = ""
        if what.startswith("size at dim ") and "," not in what:
            what, at = "size", f" at dim {what.rpartition(' ')[2]}"
        about = row.about.format(who=subject(after.source, roles), what=what) + at
    return Cause(
        category=row.category,
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
