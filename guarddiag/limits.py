"""How close a function came to torch's recompile limit without reaching it: the facts behind the
near-limit warning (``render/words.py`` words them).

torch keeps at most ``recompile_limit`` compiled variants of one code object (``cache_size_limit``
before torch 2.6; 8 by default in every torch 2.x); a call that needs one more is not compiled:
the function runs eagerly from then on, or the call raises (``fail_on_recompile_limit_hit``,
``fullgraph=True``). The limit counts cache entries, so attempts that installed no code are not
counted, and ``torch._dynamo.reset()`` empties the cache (the count after it is not known here).
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.model import FunctionSummary, Run

DEFAULT_RECOMPILE_LIMIT = 8
# The names of the limit in a run's config (--flag), new and old.
_LIMIT_FLAGS = ("recompile_limit", "cache_size_limit")


@dataclass(frozen=True)
class LimitBudget:
    """``used`` of the ``limit`` variants torch keeps for one code object. ``source``: where the limit's
    value comes from: ``torch`` (torch's record of the function's last compile), ``flag`` (a --flag of
    the run), ``default`` (torch's default: the script may have set another)."""

    used: int
    limit: int
    source: str

    @property
    def at_limit(self) -> bool:
        """No variant is left: the next new one is not compiled."""
        return self.used >= self.limit


def limit_budget(run: Run, f: FunctionSummary) -> LimitBudget | None:
    """The budget of a function that recompiled and used all its variants but one, or all, without a
    refusal yet; None otherwise (also for a paste, whose compile counts are partial, and across a
    cache reset)."""
    if f.limit_hit or not f.recompiles or run.parse.paste_messages is not None or len(set(f.frame_ids)) > 1:
        return None
    limit, source = _limit(run, f)
    used = f.compiles - len(f.failed_compiles)
    # More variants than the limit without a refusal: torch counted them otherwise (torch < 2.5 counts a
    # module's forward per module instance, guarded by id) or the limit changed: the budget is not known.
    return LimitBudget(used, limit, source) if limit - 1 <= used <= limit else None


def _limit(run: Run, f: FunctionSummary) -> tuple[int, str]:
    if f.recompile_limit is not None:
        return f.recompile_limit, "torch"
    for name, value in run.config.items():
        if name.rpartition(".")[2] in _LIMIT_FLAGS and isinstance(value, int) and not isinstance(value, bool):
            return value, "flag"
    return DEFAULT_RECOMPILE_LIMIT, "default"
