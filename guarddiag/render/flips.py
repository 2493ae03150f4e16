"""The words of config flips: what compare measured a flip doing to a cause, what a flip costs, how to
apply it, why a candidate was not run, and where a config hint stands (verified by a compare, shown to
do nothing, or not verified). Shared by the compare, run and explain reports; no I/O here.
"""

from __future__ import annotations

import dataclasses
import re

from guarddiag.child._bootstrap import CONFIG_MODULES
from guarddiag.compare import CauseResult, FlipOutcome
from guarddiag.flips import KEEPS_COMPILED, Skipped
from guarddiag.render.explain_hints import hint_text
from guarddiag.render.words import cause_subject, function_label, seconds
from guarddiag.verdicts import NO_EFFECT, VERIFIED, CauseAdvice, HintCheck, RunAdvice, function_key_dict

# What applying a flip costs, by the cost id of guarddiag.flips.FLIPS.
COSTS = {
    "dynamic_int": "the int becomes a symbolic value: one graph for all its values, the code generic in it",
    "dynamic_source": "the named inputs are dynamic from their first compile: the code is generic in those sizes or values",
    "dynamic_float": "floats become symbolic inputs: one graph for all their values",
    "all_dynamic": "every int and size starts dynamic, in every compiled function: more generic code everywhere",
    "parameter_shapes": "parameter shapes can be dynamic: the code is generic in them",
    "unbacked_source": "the named sizes are unbacked: sizes 0 and 1 are not specialized, and code that branches on them "
    "raises a data-dependent error",
    "unbacked": "sizes that change are marked unbacked: sizes 0 and 1 are not specialized, and code that branches on them "
    "raises a data-dependent error",
    "size_oblivious": "sizes 0 and 1 take the general path (an experimental torch option)",
    "hooks_unchecked": "hooks added to a module after it compiled are not run by the compiled code",
    "inlined_modules": "modules are traced inline and guarded per attribute instead of by id()",
    "more_compiles": "every new variant compiles (compile time and memory) up to the new limit",
}

# Why a candidate was not run (guarddiag.flips.SKIP_REASONS).
_SKIPPED = {
    "not_in_torch": "torch {detail} has no such flag",
    "no_op": "does nothing in this torch ({detail})",
    "in_force": "already in force",
    "not_in_version": "does nothing in torch {detail}",
    "no_such_value": "torch {detail} does not take this value",
    "unnamed": "torch cannot be given this object by name",
}

_PYTHON_VALUE = re.compile(r"^-?\d+$")


def apply_line(flag: str, value: str) -> str:
    """``torch.compiler.config.dynamic_sources = "L['x']:0"``: the flip as a line of the user's script."""
    prefix, module = next(((p, m) for p, m in CONFIG_MODULES[1:] if flag.startswith(p)), ("", CONFIG_MODULES[0][1]))
    literal = {"true": "True", "false": "False"}.get(value) or (value if _PYTHON_VALUE.match(value) else repr(value))
    return f"{module}.{flag[len(prefix):]} = {literal}"


def flip_label(o: FlipOutcome) -> str:
    """``flag=value``; a configuration of several flips: ``a=1 + b=2``."""
    return " + ".join(f"{flag}={value}" for flag, value in o.configs)


def _seconds_change(o: FlipOutcome) -> str:
    if o.compile_s_before is None or o.compile_s_after is None:
        return ""
    saved = o.compile_s_before - o.compile_s_after
    return f"compile time of the run {seconds(o.compile_s_before)} s -> {seconds(o.compile_s_after)} s (saves {seconds(saved)} s)"


def outcome_sentence(o: FlipOutcome, times: bool = True) -> str:
    """``removes 4 of 5 recompiles; compile time 0.38 s -> 0.12 s (0.26 s saved); output unchanged``
    (``times``: with the function's compile seconds in both runs, which only the compare report shows
    beside how its runs shared the cores)."""
    if o.status != "ok":
        return f"its run did not finish ({o.status}): no verdict"
    if o.unstable:
        return "the function's compile count varied between repeats: not attributed to the flip"
    if o.effect == KEEPS_COMPILED:
        parts = [_keeps_compiled(o)]
    elif o.before:
        parts = [f"removes {o.removed or 'none'} of {o.before} recompile{'s' if o.before != 1 else ''}"]
        if o.limit_hits_before:
            parts.append(f"limit hits {o.limit_hits_before} -> {o.limit_hits_after}")
        if o.refused_before:
            parts.append(f"calls a stance refused {o.refused_before} -> {o.refused_after}")
    elif o.refused_before:
        parts = [f"serves {o.served or 'none'} of the {o.refused_before} calls a stance refused from a compiled entry"]
    else:
        hits = f"limit hits {o.limit_hits_before} -> {o.limit_hits_after}"
        parts = [f"keeps the refused calls compiled ({hits})" if o.keeps_compiled else f"leaves the refused calls ({hits})"]
    parts += [f"adds {o.added} recompile{'s' if o.added != 1 else ''} of other causes"] if o.added else []
    parts += [_lost(o)] if o.lost_compiled_code else []
    parts += [_run_change(o)] if _moved(o) or o.graph_breaks_after != o.graph_breaks_before else []
    parts += [t for t in [_seconds_change(o)] if t and times]
    parts.append({True: "output differs from the baseline's", False: "output unchanged", None: "output not compared"}[o.stdout_changed])
    return "; ".join(parts)


def _lost(o: FlipOutcome) -> str:
    """Compiles the flip made fail (under suppress_errors their calls run eagerly): fewer recompiles, no fix."""
    if o.failed_after > o.failed_before or o.run_failed_after > o.run_failed_before:
        return (
            f"compiles that installed no code {o.run_failed_before} -> {o.run_failed_after} in the whole run "
            f"({o.failed_before} -> {o.failed_after} of this function): their calls ran without compiled code, so no fix"
        )
    return "no compile of the function installed code with it: its calls ran without compiled code, so no fix"


def _moved(o: FlipOutcome) -> bool:
    """Recompiles the flip made in other functions (a graph break it caused, a function compiled anew)."""
    return o.effect != KEEPS_COMPILED and o.run_recompiles_after > o.run_recompiles_before - o.removed + o.added


def _run_change(o: FlipOutcome) -> str:
    """``in the whole run: 4 recompiles -> 4, graph breaks 0 -> 1``: where the flip moved recompiles to."""
    parts = [f"{o.run_recompiles_before} recompiles -> {o.run_recompiles_after}"]
    if o.graph_breaks_after != o.graph_breaks_before:
        parts.append(f"graph breaks {o.graph_breaks_before} -> {o.graph_breaks_after}")
    verdict = "" if o.fewer_in_run or o.effect == KEEPS_COMPILED else ": not fewer, so no fix"
    return f"in the whole run {', '.join(parts)}{verdict}"


def _keeps_compiled(o: FlipOutcome) -> str:
    """A raised limit: what it bought (the refused calls compiled) and what it cost (more compiles), never a fix."""
    more = o.compiles_after - o.compiles_before
    price = f"at the price of {more} more compile{'s' if more != 1 else ''} ({o.compiles_before} -> {o.compiles_after})"
    if o.keeps_compiled:
        return f"keeps it compiled ({_hits(o.limit_hits_before)} -> 0) {price}; the recompiles stay"
    if o.limit_hits_before:
        return f"does not keep it compiled ({o.limit_hits_before} limit hits -> {o.limit_hits_after}); {price}"
    return f"no limit hit to keep compiled; {price}"


def _hits(n: int) -> str:
    return f"{n} limit hit{'s' if n != 1 else ''}"


def skipped_sentence(s: Skipped) -> str:
    """``specialize_float=false: already in force``."""
    name = f"{s.flag}={s.value}" if s.value else s.flag
    return f"{name}: {_SKIPPED[s.why].format(detail=s.detail)}"


def cause_title(c: CauseResult) -> str:
    """``forward (model.py:30): 5x value: value of `self.layer_idx` ...`` (and its limit hits, and the calls a
    compiler stance refused for it)."""
    t = c.target
    counts = [f"{t.recompiles}x" if t.recompiles else "", _hits(t.limit_hits) if t.limit_hits else ""]
    refused = f" ({t.refused} call{'s' if t.refused != 1 else ''} a stance refused)" if t.refused else ""
    shown = ", ".join(n for n in counts if n)
    return f"{function_label(t.function)}: {shown + ' ' if shown else ''}{t.category}: {cause_subject(t.cause)}{refused}"


def cause_lines(c: CauseResult, max_flips: int) -> list[str]:
    """Under a cause's title: each flip run and what it did, what it costs and how to apply it, the
    candidates not run and why (indented by the caller)."""
    out = []
    for o in c.outcomes:
        mark = "" if o.candidate or o.also else " (run for another cause)"
        out.append(f"{flip_label(o)}{mark}: {outcome_sentence(o)}")
        if o.works:
            cost = COSTS.get(o.cost)
            out.append(f"    apply: {apply_line(o.flag, o.value)}" + (f"; cost: {cost}" if cost else ""))
            out += [f"    apply: {apply_line(flag, value)}" for flag, value in o.also]
    out += [f"not run (over --max-flips {max_flips}): {flag}={value}" for flag, value in c.not_run]
    out += [f"not run: {skipped_sentence(s)}" for s in c.target.skipped]
    if not c.target.candidates and not c.outcomes:
        # Some such causes need a change of the code, others are expected (grad mode): explain's hint says which.
        out.append("no config flip answers this cause: `guarddiag explain` says whether a change of the code does, or that it is expected")
    elif not any(o.works and o.effect != KEEPS_COMPILED for o in c.outcomes) and (c.target.recompiles or c.target.refused):
        out.append("no flip run removed its recompiles" + (" or served its refused calls compiled" if c.target.refused else ""))
    return out


def check_sentence(check: HintCheck) -> str:
    """Where a config hint stands: ``verified by compare: removes 4 of 5 recompiles`` / ``not a fix here:
    ...`` / ``not verified: check it with guarddiag compare ...``."""
    best = max(check.outcomes, key=lambda o: (o.works, o.removed, o.keeps_compiled), default=None)
    if check.status == VERIFIED and best is not None:
        return f"verified by compare ({flip_label(best)}): {outcome_sentence(best, times=False)}"
    if check.status == NO_EFFECT and best is not None:
        return f"not a fix here: compare measured {flip_label(best)}: {outcome_sentence(best, times=False)}"
    if check.run_flags:
        flags = ", ".join(f"--flag {f}" for f in check.run_flags)
        return f"not verified for a run with {flags}: {check.command} measures it against torch's defaults"
    if check.outcomes:  # measured, but no run of it gave a verdict
        last = check.outcomes[-1]
        return f"not verified: compare ran {flip_label(last)}: {outcome_sentence(last, times=False)}; {check.command} measures it again"
    return f"not verified: {check.command} measures it"


def advice_lines(a: CauseAdvice, function: str = "") -> list[str]:
    """Under a cause group of a run report: its fix hint as explain gives it (the lines to write, the choices,
    what guarddiag cannot tell) and where it stands for this script, and the flips a compare of it measured
    working. A config hint a compare showed to do nothing is not a fix. ``function``: the compiled function
    its per-call lines are about."""
    from guarddiag.render.explain_words import hint_details, hint_words  # explain's words import this module

    out = []
    check = a.check
    if a.hint is not None and check is not None and check.status == NO_EFFECT:
        out.append(check_sentence(check))
    elif a.hint is not None:
        words = dataclasses.replace(hint_words(a.hint, function), check="", verified=check_sentence(check) if check else "")
        out.append(f"{words.kind}: {words.hint}")
        out += [line[2:] for line in hint_details(words)]
        if check is None and words.kind == "fix" and words.fact.lines:
            out.append(f"  {_CODE_CHANGE}")
    for o in a.found:
        out.append(f"compare measured {flip_label(o)}: {outcome_sentence(o, times=False)}")
        out += [f"  apply: {apply_line(flag, value)}" for flag, value in o.configs]
    return out


# Why a verdict file is not used (guarddiag.verdicts.IGNORED).
_IGNORED = {
    "other_schema": "written by another guarddiag: schema {schema}",
    "not_json": "its file is not JSON",
    "damaged": "its file is damaged ({schema})",
    "not_a_file": "its path holds no regular file (a link, a FIFO, a device or a folder), which guarddiag does not read",
    "too_large": "its file is far larger than any compare writes",
    "unreadable": "its file cannot be opened",
    "script_changed": "the script's file changed since",
}

# A code-change hint: compare flips config, it cannot check a change of the user's code.
_CODE_CHANGE = "not verified on this script: a change of the code, which compare cannot try"


def advice_note(advice: RunAdvice) -> str | None:
    """A note under the headline: the compare of this script that verifies its config hints, or why the
    verdicts kept for it were not used."""
    if advice.ignored:
        why = _IGNORED[advice.ignored].format(schema=advice.ignored_schema)
        return f"what an earlier compare of this script measured is not used ({why}); `{advice.command}` measures it again"
    if advice.functions and not advice.compared and advice.command:
        return f"fix hints are not verified for this script yet: `{advice.command}` tries the config flips that could remove its recompiles"
    return None


def advice_to_dict(advice: RunAdvice) -> dict[str, object]:
    """The JSON form of a run report's advice: per function, per cause group, the hint (id, kind, words),
    where it stands (status, flag, command, the measurements) and the flips compare measured working."""
    return {
        "compared": advice.compared,
        "ignored_verdicts": {"why": advice.ignored, "schema": advice.ignored_schema} if advice.ignored else None,
        "compare": advice.command,
        "functions": [
            {
                "function": function_key_dict(f.function),
                "causes": [
                    {
                        "category": a.cause.category,
                        "subject": cause_subject(a.cause),
                        "hint": None if a.hint is None else {"hint": a.hint.hint, "kind": a.hint.kind, "text": hint_text(a.hint)},
                        "verification": None if a.check is None else {
                            "status": a.check.status,
                            "flag": a.check.flag,
                            "command": a.check.command,
                            "outcomes": [dataclasses.asdict(o) | {"removed": o.removed, "works": o.works} for o in a.check.outcomes],
                        },
                        "found": [dataclasses.asdict(o) | {"removed": o.removed, "works": o.works} for o in a.found],
                    }
                    for a in f.causes
                ],
            }
            for f in advice.functions
        ],
    }
