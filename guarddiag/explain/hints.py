"""Fix hints and torch eras: what to change so that a cause that really recompiled stops doing so.

Facts only: each hint is named (``HINTS``) with the object it is about; its words are in
:mod:`guarddiag.render.explain_words`. A hint depends on the torch that wrote the log: its
version when known, else its era, told by the shape of its guards.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from guarddiag.explain import facts as F
from guarddiag.explain.model import FixHint
from guarddiag.guardexpr import as_source, readable_source
from guarddiag.model import Cause, FunctionSummary, Guard
from guarddiag.wrapped import frame_package

# Every hint, and whether it is a "note" (the recompile is inherent or expected) rather than a "fix".
HINTS = {
    "reuse_module_or_upgrade": "fix",
    "inline_inbuilt_nn_modules": "fix",
    "dynamic_range": "note",
    "mark_dynamic": "fix",
    "code_path": "note",
    "int_attribute_or_upgrade": "fix",
    "allow_unspec_int_on_nn_module": "fix",
    "float_as_tensor": "fix",
    "global_as_argument": "fix",
    "steers_python": "note",
    "same_content": "fix",
    "stable_keys": "fix",
    "one_tensor_twice": "fix",
    "mark_unbacked": "fix",
    "library_input": "note",
    "ambient_state": "note",
}
_CHECKS = {
    "inline_inbuilt_nn_modules": "guarddiag compare SCRIPT --flag inline_inbuilt_nn_modules=true",
    "allow_unspec_int_on_nn_module": "guarddiag compare SCRIPT --flag allow_unspec_int_on_nn_module",
    "steers_python": "guarddiag compare SCRIPT --flag recompile_limit=N",
}
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
            if "._modules" in g.source or "nn.modules" in g.expr and F.ROOT_SOURCE.match(g.source):
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
    """One hint per distinct advice for the causes that really recompiled, specific to the torch that wrote the log."""
    seen: dict[str, tuple[Cause, int]] = {}
    for event in f.recompile_events:
        c = event.causes[0]
        key = f"{c.category}:{readable_source(c.source)}"
        seen[key] = (seen[key][0], seen[key][1] + 1) if key in seen else (c, 1)
    hints: dict[tuple[str, str, str], FixHint] = {}
    for cause, count in seen.values():
        found = _hint_for(cause, torch_version, era, _library(f.file))
        if found is None:
            continue
        same = hints.get(found)
        name, subject, literal = found
        causes = ((cause.category, cause.subject),) if same is None else (*same.causes, (cause.category, cause.subject))
        hints[found] = FixHint(causes, count + (same.count if same else 0), name, subject, literal, _CHECKS.get(name, ""), HINTS[name])
    return tuple(hints.values())


_SIZE_CHANGE = re.compile(r"size mismatch at index (?P<dim>\d+)\. expected (?P<expected>\d+), actual (?P<actual>\d+)")
_SIZE_DIM = re.compile(r"\.size\(\)\[(\d+)\]")


def _library(file: str | None) -> str:
    """The installed package a compiled function's code is in (``transformers``), or ``""`` (user code, torch)."""
    package = frame_package(file)
    return package if package != "torch" else ""


def _is_argument(source: str) -> bool:
    """A source reached from the compiled frame's arguments (``L[...]``), not a global."""
    return (source or "").startswith("L[") or not (source or "").startswith("G[")


def _hint_for(c: Cause, torch_version: str | None, era: str, library: str = "") -> tuple[str, str, str] | None:
    """(hint, the object it is about, the literal value it names): one hint says the same for equal triples.
    ``library``: the package whose code was compiled (its caller, not the user, builds the arguments)."""
    src = F.user_name(c.source)
    if c.category == "identity" and "." not in src and era.startswith("id-modules"):
        inline = _has_flag(torch_version, era, (2, 4))
        return ("reuse_module_or_upgrade" if inline is False else "inline_inbuilt_nn_modules"), src, ""
    if c.category == "dynamic_shape":
        # `2 <= x.size()[0]`: torch >= 2.6 prints the local bare; the dim is what mark_unbacked needs.
        size = _SIZE_DIM.search(c.guard) or _SIZE_DIM.search(c.text)
        return "dynamic_range", src, size[1] if size else ""
    if c.category == "tensor" and "size" in c.subject + c.text:
        size = _SIZE_CHANGE.search(c.text)
        dim = size["dim"] if size else ""
        if library and _is_argument(c.source):
            return "library_input", src or "x", library
        if size and "1" in (size["expected"], size["actual"]):
            return "mark_unbacked", src or "x", dim
        return "mark_dynamic", src or "x", dim
    value = F.VALUE.match(as_source(c.guard))
    literal = value["val"] if value else ""
    if c.category == "value" and literal in ("True", "False", "None") or literal[:1] in ("'", '"'):
        return "code_path", src, literal
    if c.category == "value" and _is_module_attribute(c):
        has = _has_flag(torch_version, era, (2, 7))
        return ("int_attribute_or_upgrade" if has is False else "allow_unspec_int_on_nn_module"), src, ""
    if c.category == "value" and F.FLOAT_LITERAL.search(c.text):
        return "float_as_tensor", src, ""
    if c.category == "value" and c.source.startswith("G["):
        return "global_as_argument", src, ""
    if c.category == "value":
        return "steers_python", src, ""
    if c.category == "container" and c.subject.startswith("keys of"):
        return "stable_keys", src, ""
    if c.category == "container":
        return "same_content", src, ""
    if c.category == "aliasing":
        return "one_tensor_twice", c.subject.partition(":")[0], ""
    if c.category == "global_state":
        return "ambient_state", c.subject, ""
    return None


def _is_module_attribute(c: Cause) -> bool:
    """``self.layer_idx``: an attribute of an argument or global object (not a dict item)."""
    src = c.source or ""
    return bool(F.MODULE_ATTRIBUTE.match(src)) and not src.startswith("G[")
