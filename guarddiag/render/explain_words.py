"""The words of a guard model: every sentence ``guarddiag explain`` says about a fact.

:func:`explanation_words` turns an :class:`~guarddiag.explain.Explanation` (facts) into
:class:`ExplanationWords`, the record every format of ``explain`` shows (JSON is it, as data).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass

from guarddiag.explain.facts import Ambient, user_name
from guarddiag.explain.model import (
    SCHEMA,
    CacheEntry,
    CallablesObject,
    CodeLine,
    ContentObject,
    Explanation,
    FamilyObject,
    FixHint,
    FoldedObject,
    FunctionExplanation,
    GuardedObject,
    IdentityObject,
    SizeGuard,
    TensorObject,
    TypeObject,
    ValueObject,
)
from guarddiag.guardkinds import AMBIENT_KINDS
from guarddiag.render.explain_hints import choice_text, hint_cause, hint_subject, hint_text, line_where, unknown_text
from guarddiag.render.explain_rows import ObjectWords, folded_words
from guarddiag.render.flips import check_sentence
from guarddiag.render.words import cause_subject, function_label
from guarddiag.verdicts import NO_EFFECT

NOT_LISTED = (
    "anything not listed is not checked: changing it does not recompile, "
    "and the compiled code keeps using what it read when it was compiled"
)


@dataclass(frozen=True)
class EntryWords:
    """The guard model of one compile of a frame; ``differs``: how it differs from the first entry."""

    compile_id: str
    objects: tuple[ObjectWords, ...]
    ambient: str
    differs: tuple[str, ...] = ()
    # Objects folded into summary rows in the default view (--full lists each).
    folded: int = 0


@dataclass(frozen=True)
class HintWords:
    """A fix hint said in words: the causes it is for, the advice, the command that checks it, "fix" or
    "note", what guarddiag cannot tell, where it stands for the script. Its values (id, object, count, the
    lines to write, the choices) are the model's, ``fact``, said where they are shown (:func:`hint_data`,
    :func:`hint_details`); ``function``: the compiled function its per-call lines are about."""

    fact: FixHint
    function: str
    cause: str
    hint: str
    check: str = ""
    kind: str = "fix"
    cannot_tell: str = ""
    # Where a config hint stands for the script (render/flips.check_sentence): verified, or not with the command.
    verified: str = ""


@dataclass(frozen=True)
class FunctionWords:
    """A compiled function's guard model in words."""

    label: str
    name: str
    file: str
    line: int | None
    compiles: int
    recompiles: int
    entries: tuple[EntryWords, ...]
    causes: tuple[str, ...] = ()
    hints: tuple[HintWords, ...] = ()
    no_code: int = 0


@dataclass(frozen=True)
class ExplanationWords:
    """The guard model of every compiled function of a run, in words."""

    functions: tuple[FunctionWords, ...]
    torch_version: str | None = None
    era: str = ""
    full: bool = False
    note: str = NOT_LISTED
    schema: str = SCHEMA


def explanation_words(e: Explanation) -> ExplanationWords:
    """Every fact of ``e`` said in words."""
    said: dict[int, ObjectWords] = {}  # by id(): rows are shared by the entries of a function
    return ExplanationWords(tuple(_function(f, said) for f in e.functions), e.torch_version, e.era, e.full, NOT_LISTED, e.schema)


def _function(f: FunctionExplanation, said: dict[int, ObjectWords]) -> FunctionWords:
    entries: list[EntryWords] = []
    matters = frozenset(f.matters)
    for entry in f.entries:
        words = _entry(entry, said, matters)
        if entries:
            first = entries[0]
            differs = _differences(first.objects, words.objects) + _ambient_changes(first.ambient, words.ambient)
            words = EntryWords(words.compile_id, words.objects, words.ambient, differs, words.folded)
        entries.append(words)
    causes = tuple(f"{c.count}x {c.cause.category}: {cause_subject(c.cause)}" for c in f.causes)
    hints = tuple(hint_words(h, f.name) for h in f.hints)
    return FunctionWords(
        function_label(f.function), f.name, f.file, f.line, f.compiles, f.recompiles, tuple(entries), causes, hints, f.no_code
    )


def hint_words(h: FixHint, function: str) -> HintWords:
    """A hint's words; ``function``: the compiled function its per-call lines are about."""
    return _verified(HintWords(h, function, hint_cause(h), hint_text(h), h.check, h.kind, unknown_text(h)), h)


def hint_details(h: HintWords) -> list[str]:
    """What a hint says under its advice, indented from it: each line to write and where, the command that
    checks it or where it stands for the script, what guarddiag cannot tell, and the choices with their lines
    (explain's text and run's report alike)."""
    fact = h.fact
    out = [f"    {line_where(line, h.function)}: {line.code}" for line in fact.lines]
    if h.check:
        out.append(f"    check: {h.check}")
    if h.verified:
        out.append(f"    {h.verified}")
    if h.cannot_tell:
        out.append(f"    {h.cannot_tell}; the choices:" if fact.choices else f"    {h.cannot_tell}")
    for c in fact.choices:
        out.append(f"    {'' if h.cannot_tell else 'or: '}{choice_text(c, fact)}")
        out += [f"      {line_where(line, h.function)}: {line.code}" for line in c.lines]
    return out


def explanation_data(e: ExplanationWords) -> dict[str, object]:
    """``explain``'s JSON/YAML document: the words of every function, each hint's values and words (:func:`hint_data`)."""
    data = dataclasses.asdict(dataclasses.replace(e, functions=()))
    data["functions"] = [_function_data(f) for f in e.functions]
    return data


def _function_data(f: FunctionWords) -> dict[str, object]:
    data = dataclasses.asdict(dataclasses.replace(f, hints=()))
    data["hints"] = [hint_data(h) for h in f.hints]
    return data


def hint_data(h: HintWords) -> dict[str, object]:
    """A hint as plain data: its words, and its values from the model, each line with where it goes in words
    (``place``) and the function it is about, each choice with its advice."""
    fact = h.fact
    return {
        "cause": h.cause,
        "count": fact.count,
        "hint": h.hint,
        "check": h.check,
        "kind": h.kind,
        "id": fact.hint,
        "subject": hint_subject(fact),
        "lines": [_line_data(line, h.function) for line in fact.lines],
        "choices": [
            {"id": c.hint, "hint": choice_text(c, fact), "lines": [_line_data(line, h.function) for line in c.lines]}
            for c in fact.choices
        ],
        "unknown": fact.unknown,
        "cannot_tell": h.cannot_tell,
        "verified": h.verified,
    }


def _line_data(line: CodeLine, function: str) -> dict[str, str]:
    """A line to write as plain data: the model's values, with where it goes in words (``place``)."""
    return {
        "code": line.code,
        "where": line.where,
        "place": line_where(line, function),
        "function": line.function or function,
        "target": line.target,
        "at": line.at,
        "setting": line.setting,
        "value": line.value,
    }


def _verified(words: HintWords, h: FixHint) -> HintWords:
    """A hint in words with where it stands for the script; a config hint a compare showed to do nothing
    is said as such (kind "tried"), not as a fix."""
    check = h.verification
    if check is None:
        return words
    if check.status == NO_EFFECT:
        return dataclasses.replace(words, kind="tried", hint=check_sentence(check), check="")
    return dataclasses.replace(words, check="", verified=check_sentence(check))


def _entry(entry: CacheEntry, said: dict[int, ObjectWords], matters: frozenset[str]) -> EntryWords:
    rows = tuple(_marked(object_words(o, said), matters) for o in entry.objects)
    # Distinct states can read alike (a snapshot's grad mode and a grad-mode guard): each is said once.
    ambient = ", ".join(dict.fromkeys(ambient_words(a) for a in entry.ambient))
    return EntryWords(str(entry.compile_id), rows, ambient, (), entry.folded)


# The global state explain lists beside an entry's objects, beyond a guard kind's own name (guardkinds.AMBIENT_KINDS).
_AMBIENT = {
    "SAVED_TENSOR_HOOKS": "saved-tensor hooks",
    "MODULE_GLOBAL_HOOKS": "nn.Module global hooks (not each module's own hooks)",
    "TORCH_INTERNALS": "torch internals",
    "DEFAULT_DEVICE": "default device",
}
_GLOBAL_STATE = {
    "deterministic": "deterministic algorithms",
    "torch_function": "torch function mode",
    "": "global torch state (grad mode, autocast, default dtype, deterministic algorithms)",
}


def ambient_words(a: Ambient) -> str:
    """A piece of global state an entry checks, in words: ``grad mode off``, ``default device``."""
    grad = "on" if a.grad else "off"
    if a.kind == "GLOBAL_STATE":
        if a.state == "snapshot":
            return f"grad mode {grad}, autocast, default dtype, deterministic algorithms"
        if a.state == "grad":
            return f"grad mode {grad}"
        return _GLOBAL_STATE[a.state]
    return _AMBIENT.get(a.kind) or AMBIENT_KINDS[a.kind]


def _marked(words: ObjectWords, matters: frozenset[str]) -> ObjectWords:
    if words.matters or not any(s in matters for s in words.sources):
        return words
    return dataclasses.replace(words, matters=True)


def _differences(first: tuple[ObjectWords, ...], other: tuple[ObjectWords, ...]) -> tuple[str, ...]:
    """What this entry pins differently from the first one, in the user's terms (rows matched by their
    sources: two closure cells can read alike, ``func<closure>``)."""
    before = {_key(o): o for o in first}
    out = []
    for o in other:
        b = before.get(_key(o))
        if o.how == "identity (code)":
            # One row holds the functions an entry calls: the first entry's, whatever it calls.
            out.extend(_other_callables(next((x for x in first if x.how == o.how), None), o))
        elif b is None:
            out.append(f"also guards {o.name} ({o.detail})")
        elif b.pinned != o.pinned or b.detail != o.detail:
            out.append(f"{o.name}: {'another object (id)' if o.how.startswith('identity') else o.detail}")
    keys = {_key(x) for x in other}
    gone = [o.name for o in first if o.how != "identity (code)" and _key(o) not in keys]
    out.extend(f"no longer guards {name}" for name in gone)
    return tuple(out)


def _key(o: ObjectWords) -> tuple[str, ...]:
    return o.sources or (o.name,)


def _other_callables(before: ObjectWords | None, now: ObjectWords) -> list[str]:
    """A function or module under the same name that is another object now (a different function passed
    each call recompiles). Which functions a code path calls follows from the values above: a function
    called on one path only is not listed."""
    if before is None:
        return []
    ids = dict(zip(before.sources, before.pinned.split("|"), strict=False))
    changed = [s for s, pinned in zip(now.sources, now.pinned.split("|"), strict=False) if ids.get(s, pinned) != pinned]
    return [f"`{user_name(s)}`: another function or module (id)" for s in changed]


def _ambient_changes(first: str, other: str) -> tuple[str, ...]:
    """Ambient items of an entry that the first entry did not have (``grad mode off``)."""
    known = set(first.split(", "))
    new = [item for item in other.split(", ") if item and item not in known]
    return (f"ambient: {', '.join(new)}",) if new else ()


def object_words(o: GuardedObject, said: dict[int, ObjectWords] | None = None) -> ObjectWords:
    """One row in words; ``said``: the words of rows said before, by id()."""
    if said is not None:
        known = said.get(id(o))
        if known is not None:
            return known
    words = _say(o, said)
    if said is not None:
        said[id(o)] = words
    return words


def _say(o: GuardedObject, said: dict[int, ObjectWords] | None) -> ObjectWords:
    if isinstance(o, TensorObject):
        return _tensor(o)
    if isinstance(o, ValueObject):
        return _value(o)
    if isinstance(o, IdentityObject):
        return _identity(o)
    if isinstance(o, TypeObject):
        return _type(o)
    if isinstance(o, ContentObject):
        return _content(o)
    if isinstance(o, FamilyObject):
        return _family(o, said)
    if isinstance(o, FoldedObject):
        return folded_words(o, lambda m: object_words(m, said))
    return _callables(o)


def _label(o: TensorObject | ValueObject | IdentityObject | TypeObject | ContentObject) -> str:
    return f"{o.role} `{o.name}`" if o.name == o.root else f"`{o.name}`"


def _tensor(o: TensorObject) -> ObjectWords:
    name, sizes = o.name, o.sizes
    shown = "[" + ", ".join("*" if s == "None" else s for s in sizes) + "]"
    detail = f"tensor {o.dtype} {shown} requires_grad={o.requires_grad}"
    dynamic = [i for i, s in enumerate(sizes) if s == "None"]
    if dynamic:
        guards = ", ".join(f"`{g.condition}`" for g in o.size_guards)
        detail += f"; dynamic dim {', '.join(map(str, dynamic))}" + (f" (size guards: {guards})" if guards else "")
    recompile = [f"another dtype, device or requires_grad for `{name}` recompiles"]
    static = [str(i) for i, s in enumerate(sizes) if s != "None"]
    if static:
        dims = ", ".join(static)
        recompile.append(f"another size of `{name}` at dim {dims} recompiles: {'they are' if len(static) > 1 else 'it is'} static")
    elif not sizes:
        recompile.append(f"a `{name}` with dimensions (not 0-d) recompiles")
    ok = [f"new values in `{name}`: no recompile, only its metadata is checked"]
    layout = any(g.form == "layout" for g in o.size_guards)
    for d in dynamic:
        said = _dynamic_dim(name, d, [g for g in o.size_guards if d in g.dims and g.form != "layout"])
        ok.append(said + (", with the same memory layout (its stride guards below)" if layout else ""))
    # Every guard that a size could break, once: a remainder, a bound, a relation with another input.
    recompile += [_breaking(g) for g in o.size_guards if g.form != "size_0_1"]
    return ObjectWords(_label(o), o.how, detail, tuple(recompile), tuple(ok), sources=o.sources, pinned=o.pinned)


def _dynamic_dim(name: str, dim: int, guards: list[SizeGuard]) -> str:
    """Which other sizes at a dynamic dim reuse the entry: those that keep every size guard on it (torch checks
    each); with none but 0/1 specialization's, any size from 2 up."""
    kept = [g for g in guards if g.form != "size_0_1"]
    if not kept:
        return f"another size of `{name}` at dim {dim}: no recompile, dynamic (size >= 2, sizes 0 and 1 get their own entry)"
    conditions = " and ".join(f"`{g.condition}`" for g in guards)
    return f"another size of `{name}` at dim {dim} that keeps {conditions}: no recompile (a size that breaks one recompiles)"


_BREAKING = {
    "divisibility": "a branch on a remainder",
    "range": "a size range",
    "lower_bound": "a lower bound",
    "upper_bound": "an upper bound",
    "specialized": "a size specialized to one value",
    "excluded": "a size value left out",
    "layout": "the memory layout: a transposed or sliced view breaks it",
    "relation": "a relation between sizes",
    "expression": "a size expression",
}


def _breaking(g: SizeGuard) -> str:
    """``breaking `x.size(1) % 8 == 0` recompiles (a branch on a remainder, at model.py:5 in pad)``."""
    where = f", at {g.location}" if g.location else f", added by torch at {g.origin}" if g.origin else ", at a line torch does not name"
    return f"breaking `{g.condition}` recompiles ({_BREAKING.get(g.form, g.form)}{where})"


def _value(o: ValueObject) -> ObjectWords:
    name, val = o.name, o.value
    if name.endswith(".training"):
        change = f"calling .train()/.eval() so that `{name}` changes recompiles"
    else:
        change = f"changing `{name}` recompiles: its value {val} is baked in"
    return ObjectWords(_label(o), "value", f"value {val}", (change,), (), sources=o.sources, pinned=o.pinned)


def _identity(o: IdentityObject) -> ObjectWords:
    label, name = _label(o), o.name
    if o.how == "identity (code)":
        return ObjectWords(label, o.how, "id()", (), (), sources=o.sources, pinned=o.pinned)
    what = f" ({o.type})" if o.type and o.type != name else ""
    who = f"as {o.role} `{name}`" if name == o.root and o.role != "global" else f"as `{name}`"
    if o.role == "global" and name == o.root:
        recompile = (f"rebinding global `{name}` to another object recompiles: it is checked by id()",)
    else:
        recompile = (f"passing another object {who} recompiles, even an equal one: it is checked by id()",)
    # An object pinned by id() is assumed unchanged: only attributes with a guard of their own are re-checked.
    ok = (f"changing an attribute of `{name}` that is not listed here: no recompile (the compiled code keeps the old value)",)
    return ObjectWords(label + what, o.how, "id()", recompile, ok, sources=o.sources, pinned=o.pinned)


def _type(o: TypeObject) -> ObjectWords:
    label, name, typ = _label(o), o.name, o.type
    who = f"as {o.role} `{name}`" if name == o.root and o.role != "global" else f"for `{name}`"
    if o.dynamic:
        kind = typ if typ != "object" else "number"
        return ObjectWords(
            label,
            o.how,
            f"dynamic {kind} (type checked, value not)",
            (f"a `{name}` of another type recompiles",),
            (f"another {kind} value {who}: no recompile, `{name}` is a dynamic {kind}",),
            sources=o.sources,
        )
    recompile = [f"an object of another type {who} recompiles"]
    sub = o.submodules
    if sub:
        shown = ", ".join(sub) if len(sub) <= 6 else f"{sub[0]} .. {sub[-1]}"
        recompile.append(f"adding, removing or reordering submodules of `{name}` recompiles: their names ({shown}) are checked")
    ok: list[str] = []
    read_keys = o.read_keys
    if typ == "dict" or read_keys:
        if read_keys:
            ok.append(f"adding keys to `{name}`: no recompile, `{name}` is only read at key {', '.join(read_keys)}")
    elif name == o.root and o.role != "global":
        ok.append(f"passing another {typ} instance {who}: no recompile, only its type is checked (and what is listed under it)")
    elif typ not in ("tuple", "list"):
        ok.append(f"replacing `{name}` by another {typ} instance: no recompile, only its type is checked (and what is listed under it)")
    shown_label = label + (f" ({typ})" if typ != "object" else "")
    return ObjectWords(shown_label, o.how, f"type {typ}", tuple(recompile), tuple(ok), sources=o.sources)


def _content(o: ContentObject) -> ObjectWords:
    label, name = _label(o), o.name
    if o.keys:
        keys = o.keys
        shown = ", ".join(keys) if len(keys) <= 6 else f"{keys[0]} .. {keys[-1]} ({len(keys)} keys)"
        what = "submodules of" if o.submodules else "keys of"
        return ObjectWords(
            label,
            o.how,
            f"keys {shown}",
            (f"adding, removing or reordering {what} `{name}` recompiles: its keys {shown} are checked in order",),
            ("changing the values stored under those keys: only their own guards apply",),
            sources=o.sources,
            pinned=o.pinned,
        )
    if o.how == "content (key set)":
        return ObjectWords(
            label,
            o.how,
            f"keys {{{o.key_set}}}",
            (f"adding or removing keys of `{name}` recompiles: its key set is checked",),
            ("reordering its keys: no recompile",),
            sources=o.sources,
            pinned=o.pinned,
        )
    n, kind = o.length, o.type
    change = "adding or removing keys of" if kind == "dict" else "another length of"
    return ObjectWords(
        label + (f" ({kind})" if kind else ""),
        o.how,
        f"length {n}",
        (f"{change} `{name}` recompiles: its length {n} is checked",),
        (),
        sources=o.sources,
        pinned=o.pinned,
    )


_TYPE_SUFFIX = re.compile(r"^.*\((\w+)\)$")


def _family(o: FamilyObject, said: dict[int, ObjectWords] | None) -> ObjectWords:
    """One row for a family: ``300 parameters under `m`: tensor metadata each, all static shapes``."""
    n, root, kind = o.count, o.name, o.kind
    common = {"count": n, "sources": o.sources, "pinned": o.pinned}
    if kind in ("parameters", "buffers"):
        dynamic = [m for m in o.members if "dynamic" in m.how]
        shapes = "all static shapes" if not dynamic else f"{len(dynamic)} with dynamic dims"
        return ObjectWords(
            f"{n} {kind if n > 1 else kind[:-1]} under `{root}`",
            o.how,
            f"tensor metadata each, {shapes}",
            ("changing the shape, dtype, device or requires_grad of any of them recompiles",),
            ("updating their values (optimizer steps, load_state_dict of same shapes): no recompile",),
            **common,
        )
    members = [object_words(m, said) for m in o.members]
    if kind == "submodules":
        types = Counter(_TYPE_SUFFIX.sub(r"\1", m.name) for m in members)
        listed = ", ".join(f"{t} x{c}" for t, c in types.most_common(4))
        if o.how == "identity":
            return ObjectWords(
                f"{n} submodules under `{root}` ({listed})",
                o.how,
                "id() each",
                (f"replacing any submodule of `{root}` by another object recompiles: each is checked by id()",),
                (),
                **common,
            )
        return ObjectWords(
            f"{n} submodules under `{root}` ({listed})",
            o.how,
            "type each",
            (f"replacing a submodule of `{root}` by one of another type recompiles",),
            ("replacing a submodule by another instance of the same type: no recompile",),
            **common,
        )
    attr = kind.removeprefix("attr:")
    values = sorted({m.detail.removeprefix("value ") for m in members})
    shown = ", ".join(values[:3]) + (" ..." if len(values) > 3 else "")
    change = "calling .train()/.eval()" if attr == "training" else f"changing `{attr}` of any of them"
    return ObjectWords(
        f"`{attr}` of {n} objects under `{root}`",
        o.how,
        f"{'value' if o.how == 'value' else o.how} {shown}",
        (f"{change} recompiles: the values are baked in",),
        (),
        **common,
    )


def _callables(o: CallablesObject) -> ObjectWords:
    names = sorted({m.name for m in o.members})
    shown = ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return ObjectWords(
        f"modules and functions used: {shown}",
        o.how,
        "id()",
        ("rebinding or monkeypatching one of them recompiles",),
        (),
        count=o.count,
        sources=o.sources,
        pinned=o.pinned,
    )
