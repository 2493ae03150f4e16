"""Phrases every report shares: how a function is named, how a script ended, a limit hit, a failed
compile, a log that lost lines. The data layer holds the facts; these are the only words for them."""

from __future__ import annotations

from guarddiag.model import CompiledFor, FailedCompile, FunctionSummary, LimitHit, Run, compile_gap

_OUTCOMES = {
    "eager": "torch runs it without compiling from here on",
    "raised": "the call raised FailOnRecompileLimitHit (fail_on_recompile_limit_hit or fullgraph=True)",
    "compiled_again": "torch compiled it again later (the limit was raised, its cache reset, or another isolated region)",
}
_FAILED = {
    "error": "failed",
    "skipped": "skipped: Dynamo found nothing to compile and runs it eagerly",
    "no_code": "installed no code (the log shows no guards for it; it failed or was skipped)",
}
_ENDED = {"timeout": "timed out", "killed": "was killed", "interrupted": "was interrupted"}


def function_label(f: FunctionSummary) -> str:
    """``forward (model.py:12)``, or the frame id when the log never named the frame."""
    if not f.name:
        return f"<unidentified frame {', '.join(f.frame_ids)}>"
    where = (f"{short_path(f.file)}:{f.line}" if f.line is not None else short_path(f.file)) if f.file else "?"
    rank = f.rank
    label = f"{f.name} ({where})"
    if f.compiled_for:
        # torch compiled a wrapper (its `inner`, a library's decorator): name what the user compiled first.
        label = f"{', '.join(compiled_for_name(c) for c in f.compiled_for)} via {label}"
    return label + (f" [{rank}]" if rank else "")


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


def capture_gap(run: Run) -> str | None:
    """When torch compiled more in the script's process than its log shows: the log lost lines, and
    every count here is too low."""
    gap = compile_gap(run)
    if gap is None:
        return None
    counted, seen = gap
    return (
        f"torch compiled {counted} times in the script's process but its log shows {seen}: "
        "log lines were lost (did the script change torch's logging: TORCH_LOGS_FORMAT, logging.disable, "
        "its own handlers?), so these counts are too low"
    )


def limit_sentence(hit: LimitHit) -> str:
    """``hit recompile_limit (8) at 0/8 on value of argument `n`: torch runs it without compiling from here on``."""
    where = f" at {hit.compile_id}" if hit.compile_id else ""
    why = f" on {hit.cause.subject}" if hit.cause is not None else ""
    return f"hit {hit.limit} ({hit.value}){where}{why}: {_OUTCOMES.get(hit.outcome, hit.outcome)}"


def failed_sentence(failed: FailedCompile) -> str:
    """``compile 1/0 failed: Unsupported: ...``; the attempt counts as a compile, but no code was installed."""
    reason = f": {failed.reason[:160]}" if failed.reason else ""
    return f"compile {failed.compile_id} {_FAILED.get(failed.kind, failed.kind)}{reason}"
