"""The flags report (``guarddiag flags``): the config flags of one torch as a terminal table,
JSON, YAML or Markdown. No I/O here.

JSON/YAML schema versions (``schema`` key):
  guarddiag.flag-list/1 -- first version: ``torch_version`` and ``flags[]``, each with every field
  of :class:`guarddiag.flags.Flag` (the version before it had no ``schema`` key, same fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from tabulate import tabulate

from guarddiag.flags import Flag
from guarddiag.render.escape import markdown_code, markdown_text, visible_values
from guarddiag.render.formats import render_as

FLAG_LIST_SCHEMA = "guarddiag.flag-list/1"
_HEADERS = ["flag", "type", "value", "note"]


@dataclass(frozen=True)
class FlagList:
    """The flags to show (already filtered) and how they were chosen."""

    torch_version: str
    flags: tuple[Flag, ...]
    show_all: bool


def render_flags(flags: FlagList, fmt: str) -> str:
    """The flags in one of :data:`guarddiag.render.FORMATS`."""
    return render_as(fmt, lambda: flags_to_dict(flags), lambda: _markdown(flags), lambda: _table(flags))


def flags_to_dict(flags: FlagList) -> dict[str, object]:
    """Every field of every flag, in the catalog's order."""
    return {
        "schema": FLAG_LIST_SCHEMA,
        "torch_version": flags.torch_version,
        "flags": [asdict(f) | {"env": list(f.env), "choices": list(f.choices)} for f in flags.flags],
    }


def _notes(f: Flag) -> str:
    note = []
    if f.env:
        note.append(f"env {', '.join(f.env)}")
    if f.alias_of:
        note.append(f"alias of {f.alias_of}")
    if f.deprecated:
        note.append(f"deprecated: {f.deprecation_message or ''}".strip())
    if f.value != f.default:
        note.append(f"default {f.default!r}, set by environment")
    if f.choices:
        note.append(("one of " if f.choices_only else "or one of ") + ", ".join(repr(c) for c in f.choices))
    return "; ".join(note)


def _rows(flags: Sequence[Flag]) -> list[list[str]]:
    rows = []
    for f in sorted(flags, key=lambda f: f.name):
        value = repr(f.value)
        rows.append([f.name, f.type, value if len(value) < 20 else value[:17] + "...", _notes(f)])
    return rows


def _headline(flags: FlagList) -> str:
    more = "" if flags.show_all else " (inductor.* and internal names with --all)"
    return f"torch {flags.torch_version}: {len(flags.flags)} flags{more}"


def _table(flags: FlagList) -> str:
    flags = visible_values(flags)
    # Long notes (a deprecation message, a list of choices) wrap instead of making the table 200 columns wide.
    table = tabulate(_rows(flags.flags), headers=_HEADERS, maxcolwidths=[None, None, None, 48], disable_numparse=True)
    return _headline(flags) + "\n\n" + table


def _markdown(flags: FlagList) -> str:
    flags = visible_values(flags)
    rows = [
        [markdown_code(name, True), markdown_text(kind, True), markdown_code(value, True), markdown_text(note, True)]
        for name, kind, value, note in _rows(flags.flags)
    ]
    table = tabulate(rows, headers=_HEADERS, tablefmt="github", disable_numparse=True)
    return "\n".join(["## guarddiag flags", "", _headline(flags), "", table]) + "\n"
