"""What the reports of one run share: headline, notes under it, causes grouped per function, detail lines."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guarddiag.limits import limit_budget
from guarddiag.model import Cause, CauseIdentity, DictKeys, FunctionSummary, LateHook, Run
from guarddiag.places import location_file
from guarddiag.render.words import (
    capture_gap,
    cause_subject,
    cause_text,
    cause_words,
    compile_time_sentence,
    disagreement_sentence,
    failed_sentence,
    function_label,
    keys_sentence,
    limit_sentence,
    near_limit_sentence,
    parsed_stance_sentence,
    refused_words,
    script_outcome,
    short_path,
    source_label,
    torch_cache_sentence,
    uncounted_stance_sentence,
    unmeasured_guards_sentence,
    unobserved_sentence,
    user_contexts_sentence,
    wrapper_label,
)

if TYPE_CHECKING:
    from guarddiag.report import RunReport
    from guarddiag.verdicts import FunctionAdvice, RunAdvice

__all__ = [
    "CauseGroup",
    "RefusalGroup",
    "advice_notes",
    "budget_lines",
    "cause_group_line",
    "cause_group_words",
    "cause_groups",
    "compiles_cell",
    "disagreement_lines",
    "failed_sentence",
    "function_detail_lines",
    "function_label",
    "graph_break_lines",
    "group_advice_lines",
    "headline",
    "late_hook_sentence",
    "limit_sentence",
    "near_limit_lines",
    "parse_note",
    "refusal_group_line",
    "refusal_groups",
    "run_notes",
    "wants_details",
]


def headline(report: RunReport) -> str:
    """One line: totals and where they came from (for a paste, only what it shows)."""
    run = report.run
    if run.parse.paste_messages is not None:
        return (
            f"read as a paste: {run.parse.paste_messages} messages recognised ({run.recompiles} recompiles, "
            f"{run.limit_hits} recompile-limit hits in {len(run.functions)} functions); counts cover only what was pasted"
        )
    torch = f"torch {run.torch_version}" if run.torch_version else "torch version unknown"
    processes = {f.process for f in run.functions}
    # The job's ranks that show no compile (a rank that only waits) count among its ranks.
    ranks = {p for p in (*processes, *(p.process for p in (run.job.processes if run.job else ()))) if p.rank is not None}
    quiet = len(ranks - processes)
    where = f" in {len(processes)} process{'es' if len(processes) != 1 else ''}" if len(processes) > 1 or len(ranks) > 1 else ""
    where += f" ({len(ranks)} ranks{f', {quiet} showing no compile' if quiet else ''})" if len(ranks) > 1 else ""
    # Only a run whose script used a stance that refuses to recompile counts the calls it refused.
    refused = f", {run.refused_calls} calls refused by a compiler stance" if run.stances else ""
    refused += " (not all countable: see the warning)" if report.uncounted_stances else ""
    # A trace whose torch records no refusal cannot say 0: it does not know (parse_note says why).
    limits = "recompile-limit hits not recorded" if "limit_refusals" in run.parse.trace_gaps else f"{run.limit_hits} recompile-limit hits"
    return (
        f"{len(run.functions)} compiled functions{where}, {run.compiles} compiles, {run.recompiles} recompiles, "
        f"{limits}{refused}, {run.graph_breaks} graph breaks ({torch})"
    )


def run_notes(report: RunReport) -> list[tuple[str, str]]:
    """What a report says under its headline, most important first, as (kind, text): how a failed
    script ended ("outcome"), a log that lost lines or hooks a compiled module did not run ("warning"),
    what torch said about the flags ("note")."""
    run = report.run
    notes = []
    if run.source == "run" and run.status != "ok":
        notes.append(("outcome", script_outcome(run)))
    if run.folder_recreated:
        notes.append((
            "note",
            "the script removed its run folder; guarddiag re-created it from the torch log it held open "
            "(the torch version and the script's exception were written there and are not known)",
        ))
    gap = capture_gap(run, report.gaps)
    if gap:
        notes.append(("warning", gap))
    for u in run.unobserved:
        if u.reason == "guarddiag":
            notes.append(("note", "the script ran guarddiag itself: that run's compiles are in its own record, not in this one"))
        elif u in report.uncounted:  # one that never loaded torch compiled nothing: the record names it
            notes.append(("warning", unobserved_sentence(u)))
    notes += [("warning", uncounted_stance_sentence(u, run.torch_version)) for u in report.uncounted_stances]
    if run.source == "parse" and run.stances:
        notes.append(("note", parsed_stance_sentence()))
    notes += [("warning", late_hook_sentence(run, h)) for h in run.late_hooks if _missed(h)]
    notes += [("note", n) for n in run.flag_notes]
    unmeasured = unmeasured_guards_sentence(run)
    if unmeasured:
        notes.append(("note", unmeasured))
    return notes


_HOOK_WORDS = {
    "forward": "forward hook",
    "forward_pre": "forward pre-hook",
    "full_backward": "backward hook",
    "full_backward_pre": "backward pre-hook",
}


def _missed(hook: LateHook) -> bool:
    """A late hook the compiled code skipped: never compiled into a graph, and run eagerly fewer times
    than its module was called (a backward hook: never, while calls with grad enabled were made)."""
    if hook.traced:
        return False
    if hook.kind.startswith("full_backward"):
        return hook.grad_calls > 0 and hook.ran == 0
    return hook.ran < hook.calls


def late_hook_sentence(run: Run, hook: LateHook) -> str:
    """The warning for a hook the compiled module did not run: where it was added, on what, and the way out."""
    where = f"{os.path.basename(hook.file)}:{hook.line}" if hook.file else "an unknown line"
    on = f"the compiled `{hook.compiled}`" if not hook.path else f"`{hook.module}` (`{hook.path}` in the compiled `{hook.compiled}`)"
    if hook.kind.startswith("full_backward"):
        ran = f"ran 0 times in {hook.grad_calls} calls with grad enabled"
    else:
        ran = f"ran {hook.ran} of {hook.calls} calls"
    said = f"a {_HOOK_WORDS.get(hook.kind, hook.kind + ' hook')} registered at {where} on {on} after torch.compile had compiled it {ran}"
    if run.config.get("skip_nnmodule_hook_guards") is False:  # the flag was off and it still did not run
        return f"{said}; register hooks before the first call of the compiled module"
    return (
        f"{said}: compiled code does not run hooks added later (skip_nnmodule_hook_guards=True, torch's default); "
        "register hooks before the first call, or run with --flag skip_nnmodule_hook_guards=false "
        "(the module then recompiles when hooks change)"
    )


def parse_note(report: RunReport) -> str | None:
    """A note when the parser met lines or frames it could not place, else None."""
    run = report.run
    notes = []
    if run.parse.unrecognized:
        notes.append(f"{run.parse.unrecognized} torch log lines not understood (see `parse` in --format json)")
    if "limit_refusals" in run.parse.trace_gaps:
        notes.append(
            "this TORCH_TRACE comes from torch < 2.5, which records no call refused at a recompile limit: limit hits are "
            "not counted (the text log of the same run shows them)"
        )
    if run.parse.unidentified_frames:
        notes.append(
            f"{len(run.parse.unidentified_frames)} frames not named in the log "
            "(enable TORCH_LOGS=dynamo when capturing)"
        )
    if run.parse.torch_lines == 0 and run.parse.paste_messages is None:
        if run.source == "parse":
            notes.append("no torch log lines found: was the log captured with TORCH_LOGS=guards,recompiles,dynamo?")
        else:  # guarddiag set TORCH_LOGS itself: nothing compiled (before the script ended)
            where = " in the processes guarddiag observed" if report.uncounted else ""
            notes.append(f"torch logged nothing: nothing was compiled{where}" + (" before the script ended" if run.status != "ok" else ""))
    return "; ".join(notes) or None


# Disagreements with torch's own record named one by one, then counted: each is a line of its own.
_DISAGREEMENTS_SHOWN = 5


def disagreement_lines(report: RunReport) -> list[str]:
    """Each recompile whose cause torch's own record gives otherwise than guarddiag read it (the first few,
    then how many more): a note of the report, never resolved."""
    functions = {f.key: f for f in report.run.functions}
    shown = [disagreement_sentence(d, functions.get(d.function)) for d in report.disagreements[:_DISAGREEMENTS_SHOWN]]
    more = len(report.disagreements) - _DISAGREEMENTS_SHOWN
    return shown + ([f"and {more} more recompiles whose cause torch's record gives otherwise (see --format json)"] if more > 0 else [])


def compiles_cell(run: Run, f: FunctionSummary) -> int | str:
    """A function's compiles for a table; blank for a paste, which shows recompiles but not how often it compiled."""
    return "" if run.parse.paste_messages is not None else f.compiles


def function_detail_lines(f: FunctionSummary, run: Run | None = None, advice: FunctionAdvice | None = None) -> list[str]:
    """A function's section under its headline, indented: cause groups with an example, compiles that
    installed no code, limit hits (the terminal report and the watch's report alike); with its ``run``,
    also how close it is to the recompile limit and its compile time; with ``advice`` (``guarddiag run``),
    each cause group's fix hint and where it stands for the script."""
    out = []
    if len(f.compiled_for) > 1:
        out.append(
            f"  one code object for {len(f.compiled_for)} callables, {wrapper_label(f)}: they share one cache and one recompile limit, "
            "so each one's variants count against the others"
        )
    if f.code_objects > 1:
        out.append(
            f"  {f.code_objects} code objects share this name, file and first line (exec'd code, a notebook cell run again, "
            "generated methods): torch compiles and caches each on its own, so their first compiles are no recompiles"
        )
    for g in cause_groups(f):
        unlogged = f" ({g.unlogged} not logged by torch, inferred from guard listings)" if g.unlogged else ""
        out.append(f"  {cause_group_line(g)}{unlogged}")
        out.append(f"      e.g. {g.example[:160]}")
        out += [f"      keys: {keys_sentence(k)[:240]}" for k in g.keys[:4]]
        if g.where:
            out.append(f"      at {g.where[:160]}")
        elif g.inner:
            out.append(f"      at {g.inner[:160]} {INNER_LINE}")
        elif g.cause.shape:
            out.append("      at a line torch does not name (the guard's comment names no user code)")
        if g.also:
            shown = "; ".join(g.also[:4]) + (f"; and {len(g.also) - 4} more" if len(g.also) > 4 else "")
            out.append(f"      also changed since that cache entry: {shown}")
        out += [f"      {line}" for line in group_advice_lines(advice, g.cause.key)]
    if f.dynamic_dims and f.recompiles:
        out.append(f"  {dynamic_dims_sentence(f)}")
    out += [f"  {failed_sentence(c)}" for c in f.failed_compiles]
    out += [f"  {limit_sentence(hit)}" for hit in f.limit_hits]
    # A limit hit whose last reason is no cause group of the recompiles has its advice under the hits; the
    # cause of calls a stance refused that is neither, under those calls.
    grouped = {g.cause.key for g in cause_groups(f)}
    hits = {h.cause.key for h in f.limit_hits if h.cause is not None} - grouped
    for a in advice.causes if advice is not None else ():
        if a.cause.key in hits:
            out += [f"      {line}" for line in group_advice_lines(advice, a.cause.key)]
    out += [f"  {line}" for line in graph_break_lines(f)]
    for r in refusal_groups(f):
        out.append(f"  {refusal_group_line(r)}")
        out.append(f"      e.g. {r.example[:160]}")
        if r.where:
            out.append(f"      at {r.where[:160]}")
        if r.cause is not None and r.cause.key not in grouped | hits:
            out += [f"      {line}" for line in group_advice_lines(advice, r.cause.key)]
    out += [f"  {line}" for line in budget_lines(run, f)] if run is not None else []
    return out


def group_advice_lines(advice: FunctionAdvice | None, identity: CauseIdentity) -> list[str]:
    """The fix hint of one cause group (by its causes' identity) and where it stands (render/flips.advice_lines), when advised."""
    found = next((a for a in advice.causes if a.cause.key == identity), None) if advice else None
    if found is None:
        return []
    from guarddiag.render.flips import advice_lines  # only a run's report advises: parse and the watch start without it

    return advice_lines(found, advice.function.name if advice is not None else "")


def advice_notes(advice: RunAdvice | None) -> list[str]:
    """The note under a run report's headline about its fix hints (render/flips.advice_note), if any."""
    if advice is None:
        return []
    from guarddiag.render.flips import advice_note

    note = advice_note(advice)
    return [note] if note else []


def graph_break_lines(f: FunctionSummary) -> list[str]:
    """``graph break at model.py:31 in 2 compiles: Failed to trace builtin operator: ...``: each place a
    function broke its graph, with torch's reason and how many of its compiles broke there (torch
    counts one graph break per compile that breaks)."""
    places: dict[tuple[str, str], int] = {}
    for g in f.graph_breaks:
        places[g.location, g.reason] = places.get((g.location, g.reason), 0) + 1
    out = []
    for (location, reason), n in places.items():
        where = f" at {short_path(location)}" if location else ""
        why = f": {reason[:200]}" if reason else " (torch's reason is not in the log)"
        out.append(f"graph break{where} in {n} compile{'s' if n != 1 else ''}{why}")
    return out


def budget_lines(run: Run, f: FunctionSummary) -> list[str]:
    """What a function cost and has left: the near-limit warning (once), its compile time, torch's count of its
    cache entries, what a call's guard check cost measured at run time (run --measure-guards), what the script's
    recompile contexts said (each when known)."""
    known = (compile_time_sentence(f), torch_cache_sentence(f), user_contexts_sentence(f))
    return near_limit_lines(run, f) + [line for line in known if line]


def near_limit_lines(run: Run, f: FunctionSummary) -> list[str]:
    """The warning that a function is at or near its recompile limit, when it is."""
    budget = limit_budget(run, f)
    return [near_limit_sentence(budget)] if budget is not None else []


def dynamic_dims_sentence(f: FunctionSummary) -> str:
    """``dynamic after the run: `x` dim 0, `t` (its value) ...``: other sizes and values there reuse an entry while its guards hold."""
    shown = ", ".join(f"`{source_label(f, d.source)}` {_dynamic_part(d.dims)}" for d in f.dynamic_dims[:6])
    more = f" and {len(f.dynamic_dims) - 6} more" if len(f.dynamic_dims) > 6 else ""
    kinds = {"sizes" if d.dims else "values" for d in f.dynamic_dims}
    specialized = "; sizes 0 and 1 are still specialized" if "sizes" in kinds else ""
    # Not "no more recompiles": a dynamic entry holds only while its size guards do (a remainder, a bound, a relation).
    return (
        f"dynamic after the run: {shown}{more} (a compile in the cache is dynamic there: other {' and '.join(sorted(kinds))} "
        f"reuse it while its guards hold, which `guarddiag explain` lists{specialized})"
    )


def _dynamic_part(dims: tuple[int, ...]) -> str:
    """``dim 0``, ``dims 0, 1``; ``(its value)`` for a number."""
    return f"dim{'s' if len(dims) > 1 else ''} {', '.join(map(str, dims))}" if dims else "(its value)"


def wants_details(f: FunctionSummary, run: Run | None = None) -> bool:
    """Whether a function gets a section of its own under the table (what its guards cost is the guard section's)."""
    return bool(f.recompiles or f.limit_hit or f.failed_compiles or f.refusals or f.graph_breaks)


@dataclass(frozen=True)
class CauseGroup:
    """Recompiles of one function whose decisive causes are one cause (Cause.key; a symbolic-size guard's
    condition is part of it: each distinct one is its own group), with its category and subject in words."""

    category: str
    subject: str
    count: int
    unlogged: int
    example: str
    # What else changed against the entry that would otherwise have matched (subjects, first seen first).
    also: tuple[str, ...] = ()
    # The user's line behind the example's guard: ``model.py:21 in forward: return x / self.t``.
    where: str = ""
    # Where the user's line is not in the log: the innermost line torch names, torch's or a library's.
    inner: str = ""
    # The first recompile's decisive cause (its shape form and condition), and each distinct change of a dict's keys.
    cause: Cause = Cause("other", "", "", "")
    keys: tuple[DictKeys, ...] = ()


def cause_groups(f: FunctionSummary) -> list[CauseGroup]:
    """Group a function's recompiles by the decisive cause (against the entry that would otherwise have
    matched: build.py puts it first), with what else changed against that entry."""
    counts: dict[CauseIdentity, list] = {}
    for event in f.recompile_events:
        cause = event.causes[0]
        where = _line(cause.location, cause.code)
        inner = _line(cause.inner_location, cause.inner_code)
        entry = counts.setdefault(cause.key, [0, 0, cause_text(cause).split(" # ")[0], {}, where, inner, cause, {}])
        # The user's line when any recompile of the group shows it (torch 2.4 comments a later one in Dynamo's code).
        entry[4] = entry[4] or where
        entry[0] += 1
        entry[1] += 0 if event.logged else 1
        entry[3].update(dict.fromkeys(f"{c.category}: {cause_subject(c)}" for c in event.also))
        if cause.keys is not None:
            entry[7][cause.keys] = None
    groups = [
        CauseGroup(first.category, cause_subject(first), n, unlogged, ex, tuple(also), where, inner, first, tuple(keys))
        for n, unlogged, ex, also, where, inner, first, keys in counts.values()
    ]
    return sorted(groups, key=lambda g: -g.count)


def _line(location: str, code: str) -> str:
    """``model.py:21 in forward: return x / self.t``; a full path (torch's user stack prints them) shortened
    as a function's label shortens it, a path torch shortened as it is."""
    file = location_file(location)
    if os.path.isabs(file) or file[1:3] in (":\\", ":/"):
        location = short_path(file) + location[len(file) :]
    return f"{location}: {code}" if location and code else location


# Said after a line that is torch's or a library's: the guard is real, the user's line is not known.
INNER_LINE = "(torch's or a library's code: the log does not show the line of yours that led there)"


def cause_group_words(g: CauseGroup) -> str:
    """What a group's recompiles are about (:func:`guarddiag.render.words.cause_words` of its cause)."""
    return cause_words(g.cause) if g.cause.shape else g.subject


def cause_group_line(g: CauseGroup) -> str:
    """``5x value: value of `self.layer_idx` on argument `self```."""
    return f"{g.count}x {g.category}: {cause_group_words(g)}"


@dataclass(frozen=True)
class RefusalGroup:
    """Calls of one function a stance refused for one cause: its stance, the cause's category and
    subject (``""``: torch gave no reason), how many calls, an example reason and the user's line."""

    stance: str
    category: str
    subject: str
    calls: int
    example: str
    where: str = ""
    cause: Cause | None = None


def refusal_groups(f: FunctionSummary) -> list[RefusalGroup]:
    """A function's refused calls grouped by stance and cause, the most calls first."""
    groups: dict[tuple[str, CauseIdentity | None], list] = {}
    for r in f.refusals:
        c = r.cause
        where = _line(c.location, c.code) if c is not None else ""
        example = cause_text(c).split(" # ")[0] if c is not None else ""
        entry = groups.setdefault((r.stance, c.key if c is not None else None), [0, example, where, c])
        entry[0] += r.calls
    found = [
        RefusalGroup(stance, c.category if c else "", cause_subject(c) if c else "", n, ex, where, c)
        for (stance, _), (n, ex, where, c) in groups.items()
    ]
    return sorted(found, key=lambda g: -g.calls)


def refusal_group_line(g: RefusalGroup) -> str:
    """``5 calls ran eagerly instead of recompiling (stance eager_on_recompile): tensor: size of ...``."""
    calls = f"{g.calls} call{'s' if g.calls != 1 else ''} {refused_words(g.stance)}"
    why = f"{g.category}: {g.subject}" if g.subject else "torch gives no reason for them on this version"
    return f"{calls}: {why}"
