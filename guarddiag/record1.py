"""Reading a ``guarddiag.run/1`` record: its causes held words, run/2's hold facts.

A run/1 cause kept torch's text (or, for a recompile torch did not announce, ``inferred: ...`` built from two
guard listings) and its ``subject`` in words. Its facts are read again from that text, as the parser reads
them, and the role of the object's name (an argument, a closure variable, a local), which only the words
kept, is the one under which the facts say the record's words. A cause whose words no reading gives is
kept with ``known`` False: what it was about cannot be told from the record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, replace

from guarddiag.causes import classify_failure, guarded_source
from guarddiag.guardexpr import as_source, normalize_guard
from guarddiag.model import Cause, Inferred, Source
from guarddiag.render.words import UNKNOWN_SUBJECT, cause_subject

__all__ = ["run2_causes"]

# run/1's words for a compile after torch's cache was reset, and its text of an inferred cause (render/words.py's
# cause_text writes the same).
_RESET_SUBJECT = "compile cache reset"
_INFERRED_KEYS = re.compile(r"^inferred: the keys of (?P<src>.*?) changed from `(?P<before>.*?)` to `(?P<after>.*)`$", re.DOTALL)
_INFERRED = re.compile(r"^inferred: (?P<kind>\S+) on (?P<src>.*?) changed from `(?P<before>.*?)` to `(?P<after>.*)`$", re.DOTALL)
_NAME_ROLES = ("local", "argument", "closure")
_LINE = re.compile(r" at line (\d+) left on the stack")
_QUOTED = re.compile(r"`([^`]*)`")
_DIM = re.compile(r" at dim (\d+)$")


def run2_causes(data: dict) -> dict:
    """A run/1 record's JSON with each cause in run/2's form (the rest of the record is the same in both)."""
    functions = []
    for f in data.get("functions", []):
        if not isinstance(f, dict):
            functions.append(f)
            continue
        f = dict(f)
        f["recompile_events"] = [_event(e) for e in f.get("recompile_events", [])]
        f["limit_hits"] = [_with_cause(h) for h in f.get("limit_hits", [])]
        if "refusals" in f:
            f["refusals"] = [_with_cause(r) for r in f["refusals"]]
        functions.append(f)
    return {**data, "functions": functions}


def _event(e: object) -> object:
    if not isinstance(e, dict):
        return e
    return {**e, "causes": [cause2(c) for c in e.get("causes", [])], "also": [cause2(c) for c in e.get("also", [])]}


def _with_cause(x: object) -> object:
    return {**x, "cause": cause2(x["cause"])} if isinstance(x, dict) and isinstance(x.get("cause"), dict) else x


def cause2(raw: object) -> object:
    """One run/1 cause (a JSON object) as run/2's: its facts read from its text, its words dropped."""
    if not isinstance(raw, dict) or "subject" not in raw:
        return raw  # not a run/1 cause: run/2's reader says what is wrong with it
    old = dict(raw)
    subject, text = str(old.pop("subject")), str(old.get("text", ""))
    if subject == UNKNOWN_SUBJECT:
        return {**old, "text": "", "known": False}
    if subject == _RESET_SUBJECT:
        return {**old, "text": "", "reset": True}
    found = _read(old, text)
    fitted = _fitted(found, subject) if found is not None else None
    if fitted is None:
        return {**old, "known": False}
    facts = {k: v for k, v in asdict(fitted).items() if k in ("kind", "checked", "dim", "inferred")}
    facts["aliased"] = list(fitted.aliased)
    guarded = None if fitted.guarded is None else asdict(fitted.guarded)
    return {**old, **facts, "text": fitted.text, "guarded": guarded}


def _read(old: dict, text: str) -> Cause | None:
    """The facts the parser reads from a cause's text (an inferred cause's: from its two expressions)."""
    m = _INFERRED_KEYS.match(text)
    if m is not None:
        source = str(old.get("source", ""))
        return Cause(old.get("category", "other"), source, "", "", "DICT_KEYS", _name(source), inferred=Inferred(m["before"], m["after"]))
    m = _INFERRED.match(text)
    if m is not None:
        source = str(old.get("source", ""))
        found = classify_failure(m["after"])
        return Cause(
            old.get("category", "other"),
            source,
            "",
            "",
            m["kind"],
            _name(source),
            checked=found.checked,
            dim=found.dim,
            inferred=Inferred(m["before"], m["after"], m["kind"]),
        )
    # The text's comment (``  # file:line in fn``) is the record's location; the facts are in its expression.
    found = classify_failure(text.split(" # ")[0])
    if found.category != old.get("category"):
        return None
    return replace(found, text=text, guard=normalize_guard(text.split(" # ")[0]))


def _name(source: str) -> Source:
    return guarded_source(as_source(source)) if source else Source()


def _fitted(found: Cause, subject: str) -> Cause | None:
    """The reading whose words are the record's: the name's role (and a stack slot's expression) the words kept,
    a dict's length guard that the listings showed as a change of its keys; None when none is."""
    kinds = (found.kind, "DICT_KEYS") if found.category == "container" else (found.kind,)
    for kind in kinds:
        for guarded in _guesses(found.guarded, subject):
            for checked in (found.checked, *_words_checked(found, subject)):
                for dim in (found.dim, *_words_dim(subject)):
                    c = replace(found, kind=kind, guarded=guarded, checked=checked, dim=dim)
                    if cause_subject(c) == subject:
                        return c
    return None


def _guesses(src: Source | None, subject: str) -> Iterator[Source | None]:
    yield src
    if src is None:
        return
    if src.role in _NAME_ROLES:
        yield from (replace(src, role=role) for role in _NAME_ROLES if role != src.role)
    if src.role == "stack":
        line = _LINE.search(subject)
        yield replace(src, line=int(line[1]) if line else None)
        for quoted in _QUOTED.findall(subject):
            if quoted.endswith(src.path):
                yield replace(src, held=quoted[: len(quoted) - len(src.path)] if src.path else quoted)


def _words_checked(found: Cause, subject: str) -> tuple[str, ...]:
    """What an inferred cause checked, as its words named it: a tensor's property (``size of tensor ...``,
    ``dtype, size of tensor ...``), the piece of global state that changed."""
    if found.category == "global_state":
        return (subject,)
    head, sep, _ = subject.partition(" of tensor ")
    return (head,) if sep else ()


def _words_dim(subject: str) -> tuple[int, ...]:
    m = _DIM.search(subject)
    return (int(m[1]),) if m else ()
