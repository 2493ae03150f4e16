"""Compare two run records: which recompiles a change (a config flip, a code fix) removed or added.

Pure: :class:`~guarddiag.model.Run` objects in, frozen dataclasses out. Functions and causes
are matched on keys that survive a new process (no frame ids, compile ids, object ids,
addresses, sizes or cache-entry numbers); docs/matching.md states the rule with examples.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from guarddiag.guardexpr import ID_MARK, readable_expr, readable_source
from guarddiag.guardkinds import as_state_change
from guarddiag.ids import FunctionKey
from guarddiag.model import Cause, FunctionSummary, Run

CauseKey = tuple[str, str, str]

PLACEHOLDER = "<v>"

# An event without causes can come from a hand-written or older record; it still counts once.
_NO_CAUSE = Cause(category="other", source="", guard="", text="", known=False)
# Recompiles the counts imply but no event records (a log cut short between compiles): counted
# under one key so that the per-cause numbers always add up to the function's recompiles.
_UNRECORDED: CauseKey = ("other", "", "<no recompile event in the log>")
# The pattern of a compile after a cache reset: it has no guard (render/words.py's pattern_words says it).
RESET_PATTERN = "<compile cache reset>"


@dataclass(frozen=True)
class CauseDelta:
    """One kind of recompile cause of one function, counted in both runs."""

    category: str
    source: str
    pattern: str
    # The first cause seen of this kind (None: recompiles the counts imply but no event records).
    cause: Cause | None
    before: int
    after: int

    @property
    def removed(self) -> int:
        return max(self.before - self.after, 0)

    @property
    def added(self) -> int:
        return max(self.after - self.before, 0)

    @property
    def unchanged(self) -> int:
        return min(self.before, self.after)

    @property
    def key(self) -> CauseKey:
        return (self.category, self.source, self.pattern)


@dataclass(frozen=True)
class FunctionDelta:
    """One compiled function in either run: its counts in both and its causes side by side.

    Counts are None when the function did not compile at all in that run. ``function`` is the
    function as run A compiled it (as B did, when only B compiled it): its name, file, line, process.
    """

    name: str
    file: str
    line: int | None
    compiles_before: int | None
    compiles_after: int | None
    recompiles_before: int | None
    recompiles_after: int | None
    limit_hit_before: bool
    limit_hit_after: bool
    causes: tuple[CauseDelta, ...]
    function: FunctionSummary
    # Calls a compiler stance refused to recompile in each run (0 where it did not compile).
    refused_before: int = 0
    refused_after: int = 0

    @property
    def removed(self) -> int:
        return sum(c.removed for c in self.causes)

    @property
    def added(self) -> int:
        return sum(c.added for c in self.causes)

    @property
    def unchanged(self) -> int:
        return sum(c.unchanged for c in self.causes)

    @property
    def status(self) -> str:
        """``new``, ``gone``, ``kept_compiled``, ``worse``, ``fixed``, ``improved`` or ``same`` (first that applies)."""
        if self.recompiles_before is None:
            return "new"
        if self.recompiles_after is None:
            return "gone"
        # Calls refused at the limit now compile (a raised recompile_limit): more recompiles are its price,
        # not a regression; nor did it remove any.
        if self.limit_hit_before and not self.limit_hit_after and self.recompiles_after > self.recompiles_before:
            return "kept_compiled"
        # Hitting the limit means torch gave up compiling, so it outweighs a lower count; so do more
        # calls a compiler stance refused (each one a recompile that did not happen).
        refused_more, refused_fewer = self.refused_after > self.refused_before, self.refused_after < self.refused_before
        if self.recompiles_after > self.recompiles_before or (self.limit_hit_after and not self.limit_hit_before) or refused_more:
            return "worse"
        before = self.recompiles_before or self.limit_hit_before or self.refused_before
        if self.recompiles_after == 0 and not self.limit_hit_after and not self.refused_after and before:
            return "fixed"
        if self.recompiles_after < self.recompiles_before or (self.limit_hit_before and not self.limit_hit_after) or refused_fewer:
            return "improved"
        return "same"

    @property
    def order(self) -> tuple[int, int]:
        """Sort key: the biggest change first, then the most recompiles (reports break ties by name)."""
        return (-(self.removed + self.added), -max(self.recompiles_before or 0, self.recompiles_after or 0))

    @property
    def changed(self) -> bool:
        """Whether the verdict has something to say about this function."""
        return bool(
            self.removed or self.added or self.limit_hit_before != self.limit_hit_after or self.refused_before != self.refused_after
        )


@dataclass(frozen=True)
class RunDiff:
    """Run B measured against run A, function by function, biggest change first."""

    before_label: str
    after_label: str
    functions: tuple[FunctionDelta, ...]
    # ``(label, run)`` for each side whose script did not finish: its counts are partial.
    incomplete: tuple[tuple[str, Run], ...] = ()

    @property
    def recompiles_before(self) -> int:
        return sum(f.recompiles_before or 0 for f in self.functions)

    @property
    def recompiles_after(self) -> int:
        return sum(f.recompiles_after or 0 for f in self.functions)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.functions)

    @property
    def added(self) -> int:
        return sum(f.added for f in self.functions)


# --- cause keys -------------------------------------------------------------------------------

# One scan, left to right. Named groups are kept as they are; anything matched by ``lit`` is
# a value and becomes the placeholder. Identifiers are matched (and kept) so that the digits
# of ``s0`` or ``float32`` are never taken for numbers.
_TOKENS = re.compile(
    r"""
    (?P<tensor>^tensor\ '.+?'(?=\ \w[\w ]*mismatch))        # the tensor's name in a mismatch text
    | (?P<index>\bat\ index\ \d+)                          # which dimension: part of the guard
    | (?P<subscript>(?<=[\w\])])\[\s*(?:'[^']*'|"[^"]*"|-?\d+)\s*\])   # x['key'], x[0]: a source
    | (?P<lit>
        '(?:[^'\\]|\\.)*' | "(?:[^"\\]|\\.)*"               # strings
        | (?:(?<![\w)\]'"])-)?(?:\d+\.)?"""
    + re.escape(ID_MARK)
    + r"""(?:[eE][+-]?\d+)?   # ids (and floats normalize_guard cut)
        | (?:(?<![\w)\]'"])-)?(?:0[xX][0-9a-fA-F]+ | \d+(?:\.\d*)?(?:[eE][+-]?\d+)? | \.\d+)(?![\w.])   # numbers
        | \b(?:True|False|None|true|false|null|inf|nan)\b   # constants (Python and JSON)
        | \btorch\.(?:b?float|q?u?int|c?half|complex|cfloat|double|long|short|bool)\w*   # dtypes
      )
    | (?P<name>[A-Za-z_]\w*)
    """,
    re.VERBOSE,
)
# Collections of values collapse to one placeholder, so ``{'main'}`` and ``{'aux', 'main'}``
# (dict keys of two recompiles) are the same pattern.
_V = re.escape(PLACEHOLDER)
_COLLECTIONS = (
    re.compile(rf"\{{\s*(?:{_V}\s*(?:[:,]\s*{_V}\s*)*,?\s*)?\}}"),
    re.compile(rf"(?<![\w\])])\[\s*(?:{_V}\s*(?:,\s*{_V}\s*)*,?\s*)?\]"),
    # A tuple has a comma; ``f(<v>, <v>)`` is a call and stays.
    re.compile(rf"(?<![\w\])])\(\s*{_V}\s*(?:,\s*{_V}\s*)*,\s*(?:{_V}\s*)?\)"),
)


def guard_pattern(guard: str) -> str:
    """The guard with sources spelled readably and every value, id, address and size as ``<v>``.

    ``L['self'].layer_idx == 3`` -> ``self.layer_idx == <v>``;
    ``___check_obj_id(L['self'], <id>)`` -> ``___check_obj_id(self, <v>)``.
    """
    # Sources as torch >= 2.6 and listings spell them, global state as torch >= 2.2 names it: one spelling.
    text = readable_expr(as_state_change(" ".join(guard.split())))
    text = _TOKENS.sub(lambda m: PLACEHOLDER if m.group("lit") is not None else m.group(0), text)
    collapsed = None
    while collapsed != text:
        collapsed = text
        for pattern in _COLLECTIONS:
            text = pattern.sub(PLACEHOLDER, text)
    return text


def cause_key(cause: Cause) -> CauseKey:
    """``(category, readable source, pattern)``: equal for the same kind of cause in any process."""
    return (cause.category, _readable(cause.source), RESET_PATTERN if cause.reset else guard_pattern(cause.guard))


def _readable(source: str) -> str:
    # readable_source strips only a leading L[]/G[]; sources inside subscripts need the same.
    return readable_expr(readable_source(source))


# --- function keys ----------------------------------------------------------------------------


def _exact_key(f: FunctionSummary) -> FunctionKey:
    return f.key


def _fallback_key(f: FunctionSummary) -> FunctionKey:
    """The key with the file reduced to its base name, for records made in different checkouts."""
    key = f.key
    return key._replace(file=key.file.replace("\\", "/").rpartition("/")[2])


def _pair_functions(
    before: Iterable[FunctionSummary], after: Iterable[FunctionSummary]
) -> list[tuple[FunctionSummary | None, FunctionSummary | None]]:
    """Pairs (A, B) on the exact key, then the base-name key; the rest stand alone."""
    pairs: list[tuple[FunctionSummary | None, FunctionSummary | None]] = []
    rest_a, rest_b = list(before), list(after)
    for key in (_exact_key, _fallback_key):
        matched, rest_a, rest_b = _pair_on(key, rest_a, rest_b)
        pairs += matched
    pairs += [(a, None) for a in rest_a]
    pairs += [(None, b) for b in rest_b]
    return pairs


def _pair_on(
    key: Callable[[FunctionSummary], FunctionKey], before: list[FunctionSummary], after: list[FunctionSummary]
) -> tuple[list[tuple[FunctionSummary, FunctionSummary]], list[FunctionSummary], list[FunctionSummary]]:
    # Functions that share a key within one run (unnamed frames) pair in the order they compiled.
    waiting: dict[FunctionKey, list[FunctionSummary]] = {}
    for b in after:
        waiting.setdefault(key(b), []).append(b)
    pairs, rest_a = [], []
    for a in before:
        candidates = waiting.get(key(a))
        if candidates:
            pairs.append((a, candidates.pop(0)))
        else:
            rest_a.append(a)
    paired_b = {id(b) for _, b in pairs}
    return pairs, rest_a, [b for b in after if id(b) not in paired_b]


# --- the diff ---------------------------------------------------------------------------------


def _cause_counts(f: FunctionSummary | None) -> dict[CauseKey, tuple[int, Cause | None]]:
    """Recompile events per primary-cause key, with the first cause seen."""
    counts: dict[CauseKey, tuple[int, Cause | None]] = {}
    if f is None:
        return counts
    for event in f.recompile_events:
        # The decisive cause comes first (the entry that would otherwise have matched: build._decisive).
        cause = event.causes[0] if event.causes else _NO_CAUSE
        key = cause_key(cause)
        n, first = counts.get(key, (0, cause))
        counts[key] = (n + 1, first)
    missing = f.recompiles - len(f.recompile_events)
    if missing > 0:
        n, _ = counts.get(_UNRECORDED, (0, None))
        counts[_UNRECORDED] = (n + missing, None)
    return counts


def cause_counts(f: FunctionSummary | None) -> dict[CauseKey, int]:
    """A function's recompiles per decisive-cause key (:func:`cause_key`); none for a function that did not compile."""
    return {key: n for key, (n, _) in _cause_counts(f).items()}


def _function_delta(a: FunctionSummary | None, b: FunctionSummary | None) -> FunctionDelta:
    ref = a or b
    assert ref is not None, "a pair has at least one side"
    counts_a, counts_b = _cause_counts(a), _cause_counts(b)
    causes = [
        CauseDelta(
            category=key[0],
            source=key[1],
            pattern=key[2],
            cause=(counts_a.get(key) or counts_b[key])[1],
            before=counts_a.get(key, (0, None))[0],
            after=counts_b.get(key, (0, None))[0],
        )
        for key in {**counts_a, **counts_b}
    ]
    causes.sort(key=lambda c: (-c.removed, -c.added, -c.unchanged, c.key))
    return FunctionDelta(
        name=ref.name,
        file=ref.file,
        line=ref.line,
        compiles_before=a.compiles if a else None,
        compiles_after=b.compiles if b else None,
        recompiles_before=a.recompiles if a else None,
        recompiles_after=b.recompiles if b else None,
        limit_hit_before=bool(a and a.limit_hit),
        limit_hit_after=bool(b and b.limit_hit),
        causes=tuple(causes),
        function=ref,
        refused_before=a.refused_calls if a else 0,
        refused_after=b.refused_calls if b else 0,
    )


def diff_runs(before: Run, after: Run, before_label: str = "A", after_label: str = "B") -> RunDiff:
    """Every function of either run with its recompile causes counted in both, biggest change first."""
    deltas = [_function_delta(a, b) for a, b in _pair_functions(before.functions, after.functions)]
    deltas.sort(key=lambda f: f.order)
    incomplete = tuple((label, run) for label, run in ((before_label, before), (after_label, after)) if run.status != "ok")
    return RunDiff(before_label=before_label, after_label=after_label, functions=tuple(deltas), incomplete=incomplete)
