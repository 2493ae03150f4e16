"""Phrases every report shares: what a cause is about and what torch said of it, how a function is named,
how a script ended, a limit hit, a failed compile, a log that lost lines. The data layer holds the facts;
these are the only words for them."""

from __future__ import annotations

from guarddiag.child._site._guarddiag_guardtime import PROFILER_TAKEN
from guarddiag.diff import RESET_PATTERN
from guarddiag.guardexpr import readable_source
from guarddiag.ids import MAIN_PROCESS, FrameId, Process
from guarddiag.limits import LimitBudget
from guarddiag.model import (
    Cause,
    CompiledFor,
    DictKeys,
    FailedCompile,
    FunctionSummary,
    GuardTime,
    LimitHit,
    Resume,
    Run,
    Source,
    StanceUse,
    Unobserved,
)
from guarddiag.resume import resume_of, slot_index, slot_name
from guarddiag.torchcheck import ReasonDisagreement
from guarddiag.wrapped import torch_wrapper

_OUTCOMES = {
    "eager": "torch runs it without compiling from here on",
    "raised": "the call raised FailOnRecompileLimitHit (fail_on_recompile_limit_hit or fullgraph=True)",
    "compiled_again": "torch compiled it again later (the limit was raised, its cache reset, or another isolated region)",
}
# What a compiler stance did with a call it refused to recompile (Refusal.stance).
_REFUSED = {
    "eager_on_recompile": "ran eagerly instead of recompiling (stance eager_on_recompile)",
    "fail_on_recompile": "raised RuntimeError instead of recompiling (stance fail_on_recompile)",
}
_FAILED = {
    "error": "failed",
    "skipped": "skipped: Dynamo found nothing to compile and runs it eagerly",
    "no_code": "installed no code (the log shows no guards for it; it failed or was skipped)",
}
_ENDED = {"timeout": "timed out", "killed": "was killed", "interrupted": "was interrupted"}


def function_label(f: FunctionSummary, process: bool = True) -> str:
    """The one name of a function in every report: ``forward (model.py:12) [rank1]``; a resume function
    after a graph break by the user's function and the line (``train_step, after the graph break at line 19
    (train.py)``); a wrapper torch compiles (its ``inner``) by what the user compiled through it
    (``Sequential (module)``); the frame id when the log never named the frame. ``process=False`` leaves
    out the process (a sentence that names the ranks itself)."""
    if not f.name:
        return f"<unidentified frame {', '.join(map(str, f.frame_ids))}>"
    # torch compiled its wrapper (`inner`, a library's decorator): the user knows what they compiled.
    compiled = ", ".join(compiled_for_name(c) for c in f.compiled_for)
    label = compiled or place_label(f.name, f.file, f.line, f.resume)
    if f.code_objects > 1:
        label += f" [{f.code_objects} code objects]"
    return label + (f" [{f.process}]" if f.process and process else "")


def place_label(name: str, file: str, line: int | None, resume: Resume | None = None) -> str:
    """``forward (model.py:12)``, or for a resume function ``train_step, after the graph break at line 19
    (train.py)``: a function by name, file and first line (a baseline's entry, which keeps no more)."""
    resume = resume or resume_of(name, line)
    if resume is not None:
        at = f" at line {resume.line}" if resume.line is not None else ""
        return f"{resume.function}, after the graph break{at} ({short_path(file) if file else '?'})"
    where = (f"{short_path(file)}:{line}" if line is not None else short_path(file)) if file else "?"
    return f"{name} ({where})"


def source_label(f: FunctionSummary, source: str) -> str:
    """A guarded object in the user's words: ``m.layer_idx`` for ``L['m'].layer_idx``; a resume function's
    stack slot by the expression it holds (``self.head(x)`` for ``___stack0``) where the source told it."""
    readable = readable_source(source)
    index = slot_index(readable)
    if index is None or f.resume is None:
        return readable
    name = slot_name(index)
    held = next((s.expression for s in f.resume.slots if s.name == name and s.expression), "")
    return held + readable[len(name) :] if held else readable


def wrapper_label(f: FunctionSummary) -> str:
    """The code object compiled for a wrapped callable, as torch names it: ``torch's wrapper `inner`
    (_dynamo/external_utils.py:67)``, a library's ``the wrapper `wrapper` (utils/generic.py:940)``."""
    whose = "torch's wrapper" if torch_wrapper(f.file) else "the wrapper"
    where = f"{short_path(f.file)}:{f.line}" if f.line is not None else short_path(f.file)
    return f"{whose} `{f.name}` ({where})"


def compiled_for_name(c: CompiledFor) -> str:
    """``sgd_momentum (corpus/train.py)``, ``Sequential (module)``, ``GPT2LMHeadModel.forward``."""
    if c.kind == "module":
        return f"{c.name} (module)"
    return f"{c.name} ({short_path(c.file)})" if c.file and c.kind == "function" else c.name


def short_path(path: str) -> str:
    """The last two parts of a path: ``scenarios/model.py``."""
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else path


def script_outcome(run: Run) -> str:
    """How a run that did not finish cleanly ended, in words: ``the script failed (exit status 1)``, or,
    when its uncaught exception names a --flag, ``the script failed on --flag NAME=VALUE (...)``."""
    if run.error_flags:
        flags = ", ".join(f"--flag {f}" for f in run.error_flags)
        return f"the script failed on {flags} ({run.error}): its error names that flag; fix or drop it"
    return f"the script {_ENDED.get(run.status, run.status)} (exit status {run.exit_code})"


def capture_gap(run: Run, gaps: tuple[tuple[Process, int, int], ...]) -> str | None:
    """When torch compiled more in a process than its log shows (the script's own process, or a rank
    or other process of its job): the log lost lines, and the counts there are too low. ``gaps``: the
    run's, as its report value holds them (report.RunReport)."""
    if not gaps:
        return None
    where = "; ".join(
        f"torch compiled {counted} times in {_process_words(process)} but its log shows {seen}" for process, counted, seen in gaps
    )
    whose = "these counts are" if run.job is None else f"the counts of {', '.join(_process_words(p) for p, _, _ in gaps)} are"
    return (
        f"{where}: log lines were lost (did the script change torch's logging: TORCH_LOGS_FORMAT, logging.disable, "
        f"its own handlers?), so {whose} too low"
    )


_UNOBSERVED_WHY = {
    "isolated": "it was started with -I, which ignores PYTHONPATH, where guarddiag's start-up hook is",
    "ignore_environment": "it was started with -E, which ignores PYTHONPATH, where guarddiag's start-up hook is",
    "no_site": "it was started with -S, which skips the site module that runs guarddiag's start-up hook",
    "no_run_mark": "it was given an environment without guarddiag's variables (pass env={**os.environ, ...} to keep them)",
    "pythonpath": "its PYTHONPATH dropped the folder of guarddiag's start-up hook (add to PYTHONPATH instead of replacing it)",
    "other_run": "its environment names another guarddiag run's folder",
}


def unobserved_sentence(u: Unobserved) -> str:
    """``a Python process of the run ran unobserved (pid 7: python -E w.py): it was started with -E, ...``."""
    who = f"pid {u.pid}: {u.argv[:120]}" if u.pid is not None else u.argv[:120]
    why = _UNOBSERVED_WHY.get(u.reason, "guarddiag's start-up hook did not run in it (another sitecustomize first on its path?)")
    counted = {True: "it loaded torch, so its compiles are not counted", False: "it did not load torch while guarddiag watched it"}
    return f"a Python process of the run ran unobserved ({who}): {why}; {counted.get(u.torch, 'its compiles are not counted')}"


def _process_words(process: Process) -> str:
    return "the script's process" if not process else f"process {process}"


# What each form of symbolic-size guard (guardkinds.SHAPE_FORMS) keeps, said before its condition.
_SHAPE_FORMS = {
    "divisibility": "a branch on a size's remainder",
    "size_0_1": "size 0/1 specialization (torch compiles sizes 0 and 1 on their own)",
    "range": "a size range",
    "lower_bound": "a lower bound on a size",
    "upper_bound": "an upper bound on a size",
    "specialized": "a size specialized to one value",
    "excluded": "a size value left out",
    "layout": "a stride (memory layout) guard",
    "relation": "a relation between sizes",
    "expression": "a size expression",
}


# The subject of a cause the log does not show (a recompile without its reasons, a record without causes).
UNKNOWN_SUBJECT = "unknown"
_RESET_SUBJECT = "compile cache reset"
_UNKNOWN_TEXT = (
    "the log does not show why (torch did not log it, or its reason lines are not in the log), and no guard listing "
    "of the previous compile was in the log to compare"
)
_RESET_TEXT = (
    "compiled again from scratch: torch._dynamo.reset() dropped its compiled code (or another code object "
    "with the same name and first line was compiled)"
)
# What a cause of each guard kind (guardkinds.KINDS) is about: ``{who}`` the object, ``{what}`` the property
# checked. A kind not here is its object alone.
_CONTENT = "content of {who}"
_VALUE_OF = "value of {who}"
_MARKING = "dynamic-dimension marking of {who}"
_ABOUT = {
    "TENSOR_MATCH": "{what} of tensor {who}",
    "ID_MATCH": "{who}: a different object",
    "NOT_NONE_MATCH": "{who}: a different object",
    "TYPE_MATCH": "{who}: another type",
    "DICT_VERSION": _CONTENT,
    "DICT_KEYS": "keys of {who}",
    "DICT_KEYS_MATCH": _CONTENT,
    "DICT_CONTAINS": _CONTENT,
    "LENGTH_CHECK": "length of {who}",
    "DICT_LENGTH": _CONTENT,
    "SEQUENCE_LENGTH": _CONTENT,
    "TUPLE_ITERATOR_LEN": _CONTENT,
    "BACKEND_MATCH": "the compiler backend",
    "NO_TENSOR_ALIASING": "{who}: one tensor passed more than once",
    "DYNAMIC_INDICES": _MARKING,
    "NO_HASATTR": _MARKING,
    "DIMENSION_DYNAMIC_MARKING_GUARD": _MARKING,
    "SHAPE_ENV": "size guard `{what}`",
    "OBJECT_ALIASING": "{who}: one object, or two",
    "EQUALS_MATCH": _VALUE_OF,
    "CONSTANT_MATCH": _VALUE_OF,
    "TRUE_MATCH": _VALUE_OF,
    "FALSE_MATCH": _VALUE_OF,
    "NONE_MATCH": _VALUE_OF,
}
# A role of a name (Source.role) as a report says it before the name.
_ROLES = {"closure": "closure variable"}


def source_words(src: Source) -> str:
    """The object a guard concerns, in plain words: ```m.layer_idx` on argument `m```."""
    if src.role == "frame":
        return "the compiled frame"
    if src.role == "torch":
        return f"torch internals (`{src.root}`)"
    if src.role == "module":
        return f"module `{src.root}`"
    if src.role == "module_global":
        where = "the script" if src.module == "__main__" else f"module `{src.module}`"
        return f"global `{src.root}` of {where}"
    if src.role == "expression":
        return f"`{src.root}`"
    if src.role == "stack":
        if src.held:
            return f"`{src.held}{src.path}`"
        at = f" at line {src.line}" if src.line is not None else ""
        return f"`{src.root}{src.path}` (a value the graph break{at} left on the stack)"
    where = _ROLES.get(src.role, src.role)
    return f"`{src.root}{src.path}` on {where} `{src.root}`" if src.path else f"{where} `{src.root}`"


def cause_subject(c: Cause) -> str:
    """What a cause is about, in words: ``value of argument `n```, ``size of tensor argument `x` at dim 0``."""
    if not c.known:
        return UNKNOWN_SUBJECT
    if c.reset:
        return _RESET_SUBJECT
    if c.category == "global_state":
        return c.checked
    template = _ABOUT.get(c.kind, "{who}")
    if c.category == "aliasing":
        return template.format(who=" and ".join(f"`{n}`" for n in c.aliased) or "tensor inputs")
    if c.guarded is None:
        if not c.kind:
            return "unclassified guard"
        # A relation of sizes alone (``Eq(s0, 3)``) names no object.
        return template.partition(" of {who}")[0] if "{who}" in template else template.format(who="", what=c.checked)
    words = template.format(who=source_words(c.guarded), what=c.checked)
    return words + (f" at dim {c.dim}" if c.dim is not None else "")


def cause_text(c: Cause) -> str:
    """What torch said of the cause: its failure text; for a cause read from two guard listings, what changed
    in them; for a compile after a cache reset or a recompile the log shows no reason for, why not."""
    if c.inferred is not None:
        was, now = _short(c.inferred.before), _short(c.inferred.after)
        if not c.inferred.kind:
            return f"inferred: the keys of {readable_source(c.source)} changed from `{was}` to `{now}`"
        return f"inferred: {c.inferred.kind} on {readable_source(c.source) or 'the frame'} changed from `{was}` to `{now}`"
    if not c.known:
        return _UNKNOWN_TEXT
    if c.reset:
        return _RESET_TEXT
    return c.text


def pattern_words(pattern: str) -> str:
    """A cause key's guard pattern as reports show it: a compile after a cache reset has no guard, said in words."""
    return "compiled again after a cache reset" if pattern == RESET_PATTERN else pattern


def rank_cause_words(c: Cause, also: bool) -> str:
    """A cause ranks recompiled on: ``size of tensor argument `x` at dim 0``, or ``also ...`` for what else
    changed against the entry a recompile missed."""
    return f"also {cause_subject(c)}" if also else cause_subject(c)


def _short(expr: str, width: int = 80) -> str:
    return expr if len(expr) <= width else expr[: width - 3] + "..."


def cause_words(c: Cause) -> str:
    """What a cause is about: its subject, or for a symbolic-size guard its form and the condition the
    entry needs (``a branch on a size's remainder: the entry holds only while `x.size(1) % 8 == 0```)."""
    if c.shape:
        return f"{_SHAPE_FORMS.get(c.shape, c.shape)}: the entry holds only while `{c.condition}`"
    return cause_subject(c)


def keys_sentence(keys: DictKeys) -> str:
    """Which keys of a dict came, went or moved, as far as the guard listings tell."""
    if keys.before is None:
        return "which keys changed: the guard listings in the log do not say"
    before = ", ".join(keys.before) or "none"
    if keys.after is None:
        return f"the entry's keys were {before}; the call's keys are not in the log (it has no guard listing of its own)"
    added = [k for k in keys.after if k not in keys.before]
    removed = [k for k in keys.before if k not in keys.after]
    parts = [f"{', '.join(added)} added"] if added else []
    parts += [f"{', '.join(removed)} removed"] if removed else []
    if not parts and keys.ordered and keys.before != keys.after:
        parts.append("the same keys in another order")
    if not parts:
        parts.append("the listings show the same keys" + ("" if keys.ordered else " (torch guarded the key set: the order is not known)"))
    return f"{'; '.join(parts)} (keys were {before}, now {', '.join(keys.after) or 'none'})"


def limit_sentence(hit: LimitHit) -> str:
    """``hit recompile_limit (8) at 0/8 on value of argument `n`: torch runs it without compiling from here on``."""
    # A paste's hit may name its process alone (``rank7:``): no compile number.
    place = hit.compile_id
    bare = isinstance(place, FrameId) and not place.frame
    where = "" if place is None else f" in {place.process}" if bare else f" at {place}"
    why = f" on {cause_words(hit.cause)}" if hit.cause is not None else ""
    if hit.cause is not None and hit.cause.keys is not None:
        why += f" ({keys_sentence(hit.cause.keys)})"
    limit = f"{hit.limit} ({hit.value})" if hit.limit else "the recompile limit (the log begins below the warning's line that names it)"
    return f"hit {limit}{where}{why}: {_OUTCOMES.get(hit.outcome, hit.outcome)}"


def failed_sentence(failed: FailedCompile) -> str:
    """``compile 1/0 failed: Unsupported: ...``; the attempt counts as a compile, but no code was installed."""
    reason = f": {failed.reason[:160]}" if failed.reason else ""
    return f"compile {failed.compile_id} {_FAILED.get(failed.kind, failed.kind)}{reason}"


_LIMIT_SOURCES = {
    "torch": "recompile_limit {limit} at its last compile",
    "flag": "recompile_limit={limit} from --flag",
    "default": "torch's default of {limit}, unless the script sets recompile_limit",
}


def near_limit_sentence(budget: LimitBudget) -> str:
    """``near the recompile limit: 7 of 8 variants compiled (...); one more compiles, then new variants run eagerly ...``."""
    where = _LIMIT_SOURCES.get(budget.source, "{limit}").format(limit=budget.limit)
    head, then = ("at", "new variants") if budget.at_limit else ("near", "one more compiles, then new variants")
    return (
        f"{head} the recompile limit: {budget.used} of {budget.limit} variants compiled ({where}); {then} run eagerly "
        "(or raise, with fail_on_recompile_limit_hit); the limit counts per code object, for all its callers"
    )


def seconds(value: float) -> str:
    """``1.23``: seconds as the reports show them."""
    return f"{value:.2f}"


def _share(part: float, whole: float) -> str:
    return f" ({part / whole:.0%})" if whole > 0 else ""


def compile_time_sentence(f: FunctionSummary) -> str | None:
    """``compile time 0.41 s, 0.30 s (73%) of it in 7 recompiles``; None when torch's times are not known."""
    if f.compile_s is None or f.recompile_s is None:
        return None
    if not f.recompiles:
        return f"compile time {seconds(f.compile_s)} s"
    return (
        f"compile time {seconds(f.compile_s)} s, {seconds(f.recompile_s)} s{_share(f.recompile_s, f.compile_s)} "
        f"of it in {f.recompiles} recompiles"
    )


def run_compile_time_sentence(run: Run) -> str | None:
    """``compile time 2.31 s, 1.80 s (78%) of it in recompiles`` for the whole run; None when not known."""
    total, again = run.compile_s, run.recompile_s
    if total is None or again is None:
        return None
    return f"compile time {seconds(total)} s, {seconds(again)} s{_share(again, total)} of it in recompiles"


def refused_words(stance: str) -> str:
    """What a stance did with the calls it refused: ``ran eagerly instead of recompiling (stance ...)``."""
    return _REFUSED.get(stance, f"refused by stance {stance}")


def parsed_stance_sentence() -> str:
    """What a parsed log cannot show of the calls compiler stances refused."""
    return (
        "a log shows a call fail_on_recompile refused only where the script printed its RuntimeError into it, and "
        "nothing of the calls eager_on_recompile ran eagerly (torch logs none): `guarddiag run` counts both"
    )


def uncounted_stance_sentence(use: StanceUse, torch_version: str | None) -> str:
    """Why the calls a stance refused are not in the counts, and what would count them."""
    where = f" in {_process_words(use.process)}" if use.process else ""
    if use.stance == "skip_guard_eval_unsafe":
        return (
            f"compiled code ran with skip_guard_eval_unsafe=True{where}: torch then checks only the guards that tell "
            "cache entries apart, so a call that would have recompiled may have run another entry's code (its results "
            "may be wrong) or raised RuntimeError; guarddiag can see neither, so such calls are not counted; run "
            "without it to count them"
        )
    torch = f"torch {torch_version}" if torch_version else "this torch"
    return (
        f"the script set stance {use.stance}{where}, and {torch} gives guarddiag no way to see the calls it refuses "
        "(torch 2.7 and later do): calls it served without recompiling are not counted"
    )


def micros(value: float) -> str:
    """``206 us``, ``3.5 us``, ``1.48 ms``: microseconds as the reports show them."""
    if value >= 1000:
        return f"{value / 1000:.2f} ms"
    return f"{value:.0f} us" if value >= 10 else f"{value:.1f} us"


def torch_cache_sentence(f: FunctionSummary) -> str | None:
    """``torch: 2 entries in the cache before its last compile``, as far as torch's own figures tell; None where
    it gave none (a parsed log, an older torch). What the entries' guards cost is the guard section's."""
    sizes = [m for m in f.torch_metrics if m.cache_size is not None]
    if not sizes or not sizes[-1].cache_size:  # an empty cache says nothing a function's counts do not
        return None
    size, accumulated = sizes[-1].cache_size, sizes[-1].accumulated_cache_size
    across = f" ({accumulated} across the frames of its code)" if accumulated is not None and accumulated != size else ""
    return f"torch: {size} entr{'y' if size == 1 else 'ies'}{across} in the cache before its last compile"


def user_contexts_sentence(f: FunctionSummary) -> str | None:
    """What the script's recompile-context hooks returned at the function's compiles (torch >= 2.9), each once."""
    seen = list(dict.fromkeys(c for m in f.torch_metrics for c in (m.user_contexts or ()) if c))
    if not seen:
        return None
    shown = "; ".join(c[:120] for c in seen[:4]) + (f"; and {len(seen) - 4} more" if len(seen) > 4 else "")
    return f"the script's recompile contexts: {shown}"


def disagreement_sentence(d: ReasonDisagreement, f: FunctionSummary | None) -> str:
    """A recompile whose cause torch's own record gives otherwise than guarddiag read it from the log."""
    where = function_label(f) if f is not None else d.function.name
    against = f"cache entry {d.entry}" if d.entry is not None else "its newest cache entry"
    read = (
        f"where guarddiag read `{d.read[:160]}` from the log" if d.read is not None
        else "a failure guarddiag did not read from the log"
    )
    return (
        f"torch's own record of recompile {d.compile_id} of {where} names `{d.torch_reason[:160]}` failing against "
        f"{against}, {read}: guarddiag's cause for it may be wrong (the run's folder holds torch's log and record)"
    )


def trace_line(run: Run) -> str | None:
    """``torch trace: FOLDER (...)`` where the run kept a TORCH_TRACE folder (``run --trace``)."""
    if not run.trace_path:
        return None
    return f"torch trace: {run.trace_path} (open it with tlparse, or attach it to a PyTorch issue)"


def measured_guards_sentence(run: Run, f: FunctionSummary) -> str | None:
    """``guard check measured at run time: 412 calls, median 38 us (p90 51 us) per call, against torch's
    compile-time 325 us for its last entry``; what was not measured, and why, where the run was asked to
    measure (``run --measure-guards``); None where it was not asked, or measured nothing at all (a run note)."""
    if not run.guards_measured:
        return None
    if not f.guard_times:
        if f.process != MAIN_PROCESS:
            return "guard check not measured at run time: --measure-guards measures the script's main process only"
        return "guard check not measured at run time: no call ran its compiled code in the script's main thread"
    parts = [_measured_part(g, len(f.guard_times) > 1) for g in f.guard_times]
    torch = _compile_time_latency(f)
    against = f", against torch's compile-time {micros(torch)} for its last entry" if torch is not None else ""
    return f"guard check measured at run time: {'; '.join(parts)}{against}"


def _measured_part(g: GuardTime, several: bool) -> str:
    where = f"frame {g.frame.frame}: " if several else ""
    calls = f"{g.calls} call{'s' if g.calls != 1 else ''}"
    missed = f", {g.misses} lookup{'s' if g.misses != 1 else ''} found no entry and recompiled" if g.misses else ""
    if g.median_us is None or g.p90_us is None:
        return f"{where}{calls}, none of them found a cache entry to time (each ran code compiled for it){missed}"
    timed = "" if g.timed == g.calls else f" ({g.timed} timed; an entry's first call runs right after its compile)"
    return f"{where}{calls}, median {micros(g.median_us)} (p90 {micros(g.p90_us)}) per call{timed}{missed}"


def _compile_time_latency(f: FunctionSummary) -> float | None:
    """torch's one measurement of the guard check of the function's last installed entry, at compile time."""
    timed = [m.guard_latency_us for m in f.torch_metrics if m.guard_latency_us is not None]
    return timed[-1] if timed else None


def unmeasured_guards_sentence(run: Run) -> str | None:
    """Why ``run --measure-guards`` measured nothing at all; None where it measured, or was not asked."""
    if run.guards_measured is not False:
        return None
    if run.guards_unmeasured == PROFILER_TAKEN:
        return (
            "--measure-guards measured nothing: the script ran torch's profiler itself, and torch runs one at a time "
            "(the script's replaced guarddiag's); run it without its own profiler to measure"
        )
    if run.guards_unmeasured:
        return f"--measure-guards measured nothing: torch's profiler failed ({run.guards_unmeasured[:200]})"
    return (
        "--measure-guards measured nothing: the script did not end by itself (its measurements are written when "
        "it ends; a timeout, a signal or os._exit loses them)"
    )
