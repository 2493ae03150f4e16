"""Renderers of a guard model (``guarddiag explain``): ``render_explanation(explanation, fmt) -> str``."""

from __future__ import annotations

from guarddiag.explain import Explanation
from guarddiag.render.escape import markdown_code, markdown_text, visible_values
from guarddiag.render.explain_hints import choice_text, line_where
from guarddiag.render.explain_words import (
    EntryWords,
    ExplanationWords,
    FunctionWords,
    HintWords,
    explanation_data,
    explanation_words,
    hint_details,
)
from guarddiag.render.formats import FORMATS, render_as

__all__ = ["FORMATS", "explanation_to_dict", "render_explanation"]

FOLDED_NOTE = (
    "what would recompile is spelled out for the rows that changed between entries or caused a recompile; "
    "--full lists every object and explains each"
)
# Differences of further cache entries shown before "... and N more" (--full shows every entry whole).
MAX_DIFFS = 4
_ERAS = {
    "inlined-modules": "nn.Modules are checked by type and per attribute (inlined)",
    "id-modules": "nn.Modules are checked by id() (not inlined), as on torch 2.4",
    "id-modules-old": "nn.Modules are checked by id(), as on torch < 2.4",
    "old": "flat guard lists, as on torch < 2.4",
}


def render_explanation(explanation: Explanation, fmt: str) -> str:
    """The explanation in one of :data:`FORMATS`."""
    words = explanation_words(explanation)
    # JSON and YAML keep the names exactly; the human formats show them visibly (render.escape).
    return render_as(fmt, lambda: explanation_data(words), lambda: _markdown(visible_values(words)), lambda: _text(visible_values(words)))


def explanation_to_dict(explanation: Explanation) -> dict[str, object]:
    """Plain data for JSON/YAML; ``pinned`` stays in (it is what differs between entries)."""
    return explanation_data(explanation_words(explanation))


def _headline(e: ExplanationWords) -> str:
    version = f"torch {e.torch_version}" if e.torch_version else "torch version unknown"
    era = _ERAS.get(e.era, "")
    n = len(e.functions)
    return f"guard model of {n} compiled function{'' if n == 1 else 's'} ({version}{'; ' + era if era else ''})"


def _function_title(f: FunctionWords) -> str:
    if f.no_code:
        return (
            f"{f.label}: {f.compiles} compile{'' if f.compiles == 1 else 's'}, {f.no_code} of them installed no code "
            f"(failed or skipped), {f.recompiles} recompiles"
        )
    return f"{f.label}: {f.compiles} cache entr{'y' if f.compiles == 1 else 'ies'}, {f.recompiles} recompiles"


def _text(e: ExplanationWords) -> str:
    out = [_headline(e)]
    for f in e.functions:
        out += ["", _function_title(f)]
        if not f.entries and f.no_code >= f.compiles:
            out.append("  no cache entry: every compile of it installed no code (guarddiag run shows why)")
        elif not f.entries:
            out.append("  no guard listing in the log (capture it with TORCH_LOGS=guards)")
        else:
            out += _entry_text(f.entries[0], e.full)
            if e.full:
                for entry in f.entries[1:]:
                    out += _entry_text(entry, e.full)
            else:
                out += _diff_text(f.entries[1:])
        for cause in f.causes:
            out.append(f"  recompiled: {cause}")
        for h in f.hints:
            out += _hint_text(h)
    out += ["", f"note: {e.note}"]
    if not e.full:
        out.append(f"note: {FOLDED_NOTE}")
    return "\n".join(out)


def _hint_text(h: HintWords) -> list[str]:
    """A hint: its advice, then what it says under it (:func:`hint_details`)."""
    return [f"  {h.kind} ({h.cause}): {h.hint}", *(f"  {line}" for line in hint_details(h))]


def _hint_markdown(h: HintWords) -> list[str]:
    out = [
        f"- **{markdown_text(h.kind)}** ({markdown_text(h.cause)}): {markdown_text(h.hint)}"
        + (f" (check: {markdown_code(h.check)})" if h.check else "")
    ]
    fact = h.fact
    out += [f"  - {markdown_text(line_where(line, h.function))}: {markdown_code(line.code)}" for line in fact.lines]
    if h.verified:
        out.append(f"  - {markdown_text(h.verified)}")
    if h.cannot_tell:
        out.append(f"  - {markdown_text(h.cannot_tell)}" + ("; the choices:" if fact.choices else ""))
    for c in fact.choices:
        out.append(f"  - {'' if h.cannot_tell else 'or: '}{markdown_text(choice_text(c, fact))}")
        out += [f"    - {markdown_text(line_where(line, h.function))}: {markdown_code(line.code)}" for line in c.lines]
    return out


def _entry_text(entry: EntryWords, full: bool) -> list[str]:
    folded = f" ({entry.folded} objects folded into summary rows)" if entry.folded else ""
    out = [f"  cache entry {entry.compile_id} checks{folded}:"]
    for o in entry.objects:
        out.append(f"    {o.name}: {o.detail}")
        if full or o.matters:
            out += [f"        {s}" for s in (*o.recompiles, *o.no_recompile)]
    if entry.ambient:
        out.append(f"    ambient (any change recompiles): {entry.ambient}")
    return out


def _diff_text(entries: tuple[EntryWords, ...]) -> list[str]:
    if not entries:
        return []
    shown = entries[:MAX_DIFFS]
    out = ["  other cache entries differ in:"]
    for entry in shown:
        out.append(f"    {entry.compile_id}: {'; '.join(entry.differs) or 'nothing guarddiag can see (same guards)'}")
    if len(entries) > len(shown):
        out.append(f"    ... and {len(entries) - len(shown)} more (--full lists them)")
    return out


def _markdown(e: ExplanationWords) -> str:
    from tabulate import tabulate  # markdown only: the table format starts faster without it

    out = ["## guarddiag explain", "", markdown_text(_headline(e))]
    for f in e.functions:
        out += ["", f"### {markdown_code(f.label)}", "", markdown_text(_function_title(f).removeprefix(f"{f.label}: ")), ""]
        if f.entries:
            entry = f.entries[0]
            rows = [[_cell(o.name), _cell(o.detail), _cells(o.recompiles), _cells(o.no_recompile)] for o in entry.objects]
            out.append(tabulate(rows, headers=["object", "guarded by", "would recompile", "would not recompile"], tablefmt="github"))
            if entry.ambient:
                out += ["", f"Ambient (any change recompiles): {markdown_text(entry.ambient)}"]
            if entry.folded:
                out += ["", f"{entry.folded} objects folded into summary rows (`--full` lists each)."]
            for other in f.entries[1:]:
                out.append(f"- {markdown_code(other.compile_id)}: {markdown_text('; '.join(other.differs)) or 'same guards'}")
        out += [f"- recompiled: {markdown_text(c)}" for c in f.causes]
        for h in f.hints:
            out += _hint_markdown(h)
    out += ["", f"> {markdown_text(e.note)}"]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    """A table cell of words: its names as code spans, ``|`` escaped (the cells join on guarddiag's own ``<br>``)."""
    return markdown_text(text, table=True)


def _cells(texts: tuple[str, ...]) -> str:
    return "<br>".join(map(_cell, texts)) or "-"
