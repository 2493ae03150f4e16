"""The CI gate: compare runs with the baseline and thresholds. Pure: no I/O, no printing.

A function's recompiles fail the gate when they exceed what it is allowed:
its ``budget`` in the baseline, else the script's ``max_recompiles``, else what the baseline
recorded, else 0 for a function the baseline does not know; ``--max-recompiles`` caps every
function on top. Calls a compiler stance refused to recompile (run eagerly, or raised) fail it the
same way: above ``max_refused_calls`` when set, else above what the baseline recorded, else above 0
(with or without a baseline: a refused call is a recompile the counts cannot show). A function's guards
(guardbudget.py) fail it when there are more than the baseline recorded (exactly: the count does not vary
for the same code and torch) or than a ``max_guards`` budget; its guard latency when past the baseline's
by more than the margin (torch measures it once, cold: it varies run to run) or above a
``max_guard_latency_us`` budget. A figure the run or the baseline does not tell is reported as not known,
never compared as 0. A script that
failed is reported as failed, never as a regression; so is one whose counts are too low (a log that
lost lines, a process not observed, a stance whose refused calls could not be counted).
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.baseline import Baseline, BaselineFunction, BaselineScript, relative_file
from guarddiag.config import Settings
from guarddiag.divergence import Divergence
from guarddiag.errors import OK, REGRESSION, SCRIPT_FAILED
from guarddiag.guardbudget import NOT_KNOWN, GatedFigures, LatencyMargin, gated_figures_of
from guarddiag.ids import Process
from guarddiag.model import FunctionSummary, report_order
from guarddiag.report import RunReport

FAILING = frozenset(
    {
        "regression", "limit_hit", "refused", "new_cause", "script_failed", "rank_divergence",
        "guard_count_grew", "guard_latency_grew", "over_guard_budget",
    }
)
# The findings about a function's guards that fail the gate.
GUARD_FAILING = frozenset({"guard_count_grew", "guard_latency_grew", "over_guard_budget"})
# Every finding about a function's guards.
GUARD_KINDS = GUARD_FAILING | {"guard_count_fell", "guards_unknown"}


@dataclass(frozen=True)
class GuardCheck:
    """One guard figure of a function against what it may reach: ``measure`` is ``guards`` or ``latency``
    (microseconds); ``baseline`` the baseline's figure (None: not known), ``allowed`` what it may reach
    (the baseline's count, the baseline's latency with the ``margin``, or the ``budget``)."""

    measure: str
    now: float | None
    baseline: float | None
    allowed: float | None
    budget: float | None = None
    margin: LatencyMargin | None = None


@dataclass(frozen=True)
class Finding:
    """One thing the gate has to say about a script or a function, as facts (render.gate words them).

    ``function`` is the compiled function it is about (None for the script itself, and for ``gone``:
    a baseline entry, named by ``name``, ``file`` and ``line``, that did not compile). ``report`` is the
    report value of the run of a ``script_failed`` (its gaps and uncounted processes say why);
    ``allowed`` and ``baseline`` the numbers a regression or improvement was measured against
    (``baseline`` None: not in it), for a ``refused`` the calls a compiler stance refused to recompile;
    ``categories`` what a ``new_cause`` adds. ``limits_unknown``: the record of a TORCH_TRACE whose torch
    records no call refused at a recompile limit, whose limit hits are not checked (shown, not failing).
    A ``rank_divergence`` is about the function as the first rank that did not behave as most did
    compiled it, ``divergence`` the whole comparison; it fails only under ``fail_on_rank_divergence``
    (``gating`` False: shown, not failing)."""

    # regression | limit_hit | refused | new_cause | script_failed | rank_divergence | improvement | gone | limits_unknown
    # | guard_count_grew | guard_latency_grew | over_guard_budget | guard_count_fell | guards_unknown
    kind: str
    script: str
    file: str
    line: int | None
    function: FunctionSummary | None = None
    name: str = ""
    report: RunReport | None = None
    allowed: int | None = None
    baseline: int | None = None
    categories: tuple[str, ...] = ()
    divergence: Divergence | None = None
    gating: bool = True
    # A guard finding's figure; for ``guards_unknown`` about a function, ``categories`` names the figures
    # the run does not tell (``guards``, ``latency``); about a script (no function), the baseline does not.
    guard: GuardCheck | None = None

    @property
    def failing(self) -> bool:
        return self.kind in FAILING and self.gating


@dataclass(frozen=True)
class Row:
    """One checked function: what the baseline said, what happened, what is allowed."""

    script: str
    function: FunctionSummary
    file: str
    line: int | None
    before: int | None
    after: int
    allowed: int | None
    status: str
    limit_hits_before: int | None = None
    limit_hits: int = 0
    refused_before: int | None = None
    refused: int = 0
    guards_before: GatedFigures = NOT_KNOWN
    guards: GatedFigures = NOT_KNOWN
    # What its guard count and latency may reach (None: not gated).
    guards_allowed: int | None = None
    latency_allowed: float | None = None


@dataclass(frozen=True)
class TorchChange:
    """The torch a baseline was recorded with and the torch of the runs, when they differ or are not known
    (``None``: a baseline written before guarddiag recorded it, or records that do not say)."""

    baseline: str | None
    now: str | None


# The findings that say a count moved against the baseline: torch itself can move it.
_MOVED = frozenset(
    {"regression", "improvement", "limit_hit", "refused", "new_cause", "guard_count_grew", "guard_latency_grew", "guard_count_fell"}
)


@dataclass(frozen=True)
class GateResult:
    """The report value of ``check``: everything it reports (each checked function against its budget,
    limit hits, new causes, rank divergence: each run's, from its report value), computed once; every
    renderer (render/gate.py) and ``exit_code``, what the command exits with, take it. ``settings_file``
    is the settings file in force ("" when none was found); ``torch`` is set when the report shows a
    count that moved against a baseline recorded with another (or an unknown) torch; ``latency_margin``
    when some function's guard latency was gated (the report says it is gated with a margin, and why)."""

    rows: tuple[Row, ...]
    findings: tuple[Finding, ...]
    settings_file: str = ""
    torch: TorchChange | None = None
    latency_margin: LatencyMargin | None = None

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.failing)

    @property
    def improvements(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind in ("improvement", "guard_count_fell"))

    @property
    def exit_code(self) -> int:
        if any(f.kind == "script_failed" for f in self.findings):
            return SCRIPT_FAILED
        return REGRESSION if self.failures else OK


def _match(
    functions: list[tuple[FunctionSummary, str]], script: BaselineScript | None
) -> dict[int, BaselineFunction]:
    """Baseline entry of each run function (by index), each entry taken at most once: the exact key
    first; then a function that moved within its file (lines added above it) takes the one entry of
    its name and file that no function matched exactly, when it is the only such function. Anything
    else is new to the baseline, never an entry another function already has."""
    if script is None:
        return {}
    by_key = {b.key: b for b in script.functions}
    matched: dict[int, BaselineFunction] = {}
    for i, (f, rel) in enumerate(functions):
        base = by_key.get((f.process, f.name, rel, f.line))
        if base is not None:
            matched[i] = base
    taken = {b.key for b in matched.values()}
    unmatched: dict[tuple[Process, str, str], list[int]] = {}
    for i, (f, rel) in enumerate(functions):
        if i not in matched:
            unmatched.setdefault((f.process, f.name, rel), []).append(i)
    for where, indexes in unmatched.items():
        free = [b for b in script.functions if (b.process, b.name, b.file) == where and b.key not in taken]
        if len(indexes) == 1 and len(free) == 1:
            matched[indexes[0]] = free[0]
    return matched


def _allowed(base: BaselineFunction | None, script: BaselineScript | None, spec_budget: int | None, has_baseline: bool) -> int | None:
    if base is not None and base.budget is not None:
        return base.budget
    if spec_budget is not None:
        return spec_budget
    if script is not None and script.max_recompiles is not None:
        return script.max_recompiles
    if base is not None:
        return base.recompiles
    return 0 if has_baseline else None


def _cap(*budgets: float | None) -> float | None:
    """The tightest of the budgets given, None when none is."""
    given = [b for b in budgets if b is not None]
    return min(given) if given else None


@dataclass(frozen=True)
class _GuardGate:
    """One function's guard findings and what its row shows."""

    findings: list[Finding]
    before: GatedFigures
    guards_allowed: int | None
    latency_allowed: float | None
    latency_gated: bool


def _guard_gate(
    path: str, rel: str, f: FunctionSummary, now: GatedFigures, base: BaselineFunction | None,
    script_budgets: tuple[int | None, float | None], settings: Settings,
) -> _GuardGate:
    """A function's guard count and latency against its baseline entry and budgets (the module docstring's rules)."""
    before = GatedFigures(base.guards, base.guard_latency_us) if base is not None else NOT_KNOWN
    count_budget = _cap(base.max_guards if base else None, script_budgets[0], settings.max_guards)
    latency_budget = _cap(base.max_guard_latency_us if base else None, script_budgets[1], settings.max_guard_latency_us)
    margin = LatencyMargin(settings.guard_latency_factor, settings.guard_latency_floor_us)
    found: list[Finding] = []

    def add(kind: str, check: GuardCheck) -> None:
        found.append(Finding(kind, path, rel, f.line, f, f.name, guard=check))

    if now.guards is not None:
        if count_budget is not None and now.guards > count_budget:
            add("over_guard_budget", GuardCheck("guards", now.guards, before.guards, count_budget, count_budget))
        if before.guards is not None and now.guards > before.guards:
            add("guard_count_grew", GuardCheck("guards", now.guards, before.guards, before.guards))
        elif before.guards is not None and now.guards < before.guards:
            add("guard_count_fell", GuardCheck("guards", now.guards, before.guards, before.guards))
    latency_allowed = _cap(latency_budget, None if before.latency_us is None else margin.allowed(before.latency_us))
    if now.latency_us is not None:
        if latency_budget is not None and now.latency_us > latency_budget:
            add("over_guard_budget", GuardCheck("latency", now.latency_us, before.latency_us, latency_budget, latency_budget))
        if before.latency_us is not None and now.latency_us > margin.allowed(before.latency_us):
            add(
                "guard_latency_grew",
                GuardCheck("latency", now.latency_us, before.latency_us, margin.allowed(before.latency_us), margin=margin),
            )
    # A figure asked for (by the baseline or a budget) that this run does not tell: not known, neither 0 nor a failure.
    unknown = tuple(
        measure
        for measure, value, wanted in (
            ("guards", now.guards, before.guards is not None or count_budget is not None),
            ("latency", now.latency_us, before.latency_us is not None or latency_budget is not None),
        )
        if value is None and wanted
    )
    if unknown:
        found.append(Finding("guards_unknown", path, rel, f.line, f, f.name, categories=unknown))
    guards_allowed = _cap(count_budget, before.guards)
    gated = now.latency_us is not None and latency_allowed is not None
    return _GuardGate(found, before, None if guards_allowed is None else int(guards_allowed), latency_allowed, gated)


def _costs(report: RunReport) -> dict[int, GatedFigures]:
    """Each function's gated guard figures, from the report's guard costs (computed once), by the function's id."""
    return {id(f): gated_figures_of(cost) for f, cost in report.guard_costs}


def evaluate(
    reports: dict[str, RunReport],
    baseline: Baseline | None,
    settings: Settings,
    budgets: dict[str, int | None] | None = None,
    guard_budgets: dict[str, tuple[int | None, float | None]] | None = None,
) -> GateResult:
    """Check each script's run (its report value: report.run_reports) against the baseline and thresholds
    (``budgets``: per-script max recompiles from config; ``guard_budgets``: per-script max guards and guard latency)."""
    rows: list[Row] = []
    findings: list[Finding] = []
    latency_gated = False
    for path, report in reports.items():
        run = report.run
        # Counts too low (a log lost lines, a worker compiled unobserved) are not compared: a
        # regression there would pass silently.
        if run.status != "ok" or not report.counted:
            findings.append(Finding("script_failed", path, path, None, report=report))
            continue
        script = baseline.script(path) if baseline else None
        if baseline is not None and script is None:
            findings.append(Finding("gone", path, path, None))
        if "limit_refusals" in run.parse.trace_gaps:  # a trace whose torch records no refusal: hits cannot be checked
            findings.append(Finding("limits_unknown", path, path, None))
        ordered = [(f, relative_file(f.file, settings.root)) for f in sorted(run.functions, key=report_order)]
        matches = _match(ordered, script)
        seen = {b.key for b in matches.values()}
        figures = _costs(report)
        baseline_unknown = False
        for i, (f, rel) in enumerate(ordered):
            base = matches.get(i)
            allowed = _allowed(base, script, (budgets or {}).get(path), baseline is not None)
            if settings.max_recompiles is not None:
                allowed = settings.max_recompiles if allowed is None else min(allowed, settings.max_recompiles)
            status = "new" if base is None and baseline is not None and script is not None else "ok"
            if allowed is not None and f.recompiles > allowed:
                status = "REGRESSION"
                was = base.recompiles if base is not None else None
                findings.append(Finding("regression", path, rel, f.line, f, f.name, allowed=allowed, baseline=was))
            elif base is not None and f.recompiles < base.recompiles:
                status = "improved"
                findings.append(Finding("improvement", path, rel, f.line, f, f.name, baseline=base.recompiles))
            # A limit hit caps the recompile count, so counts cannot show it: more hits than the
            # baseline recorded (a function new to it recorded none) is a regression even without
            # --fail-on-limit-hit: past the limit the function runs without compiling.
            new_hits = baseline is not None and len(f.limit_hits) > (base.limit_hits if base is not None else 0)
            if (settings.fail_on_limit_hit or new_hits) and f.limit_hit:
                status = "REGRESSION"
                findings.append(Finding("limit_hit", path, rel, f.line, f, f.name))
            # A refused call is a recompile the counts cannot show: it fails like a new limit hit.
            refused_allowed = settings.max_refused_calls
            if refused_allowed is None:
                refused_allowed = base.refused_calls if base is not None else 0
            if f.refused_calls > refused_allowed:
                status = "REGRESSION"
                was = base.refused_calls if base is not None else None
                findings.append(Finding("refused", path, rel, f.line, f, f.name, allowed=refused_allowed, baseline=was))
            if settings.fail_on_new_cause and base is not None:
                new = sorted({c for c in (e.causes[0].category for e in f.recompile_events if e.causes)} - dict(base.causes).keys())
                if new:
                    status = "REGRESSION"
                    findings.append(Finding("new_cause", path, rel, f.line, f, f.name, categories=tuple(new)))
            now = figures.get(id(f), NOT_KNOWN)
            guard = _guard_gate(path, rel, f, now, base, (guard_budgets or {}).get(path, (None, None)), settings)
            findings += guard.findings
            if any(g.kind in GUARD_FAILING for g in guard.findings):
                status = "REGRESSION"
            latency_gated |= guard.latency_gated
            baseline_unknown |= base is not None and now.known and not guard.before.known
            rows.append(
                Row(
                    path, f, rel, f.line, base.recompiles if base else None, f.recompiles, allowed, status,
                    base.limit_hits if base else None, len(f.limit_hits),
                    base.refused_calls if base else None, f.refused_calls,
                    guard.before, now, guard.guards_allowed, guard.latency_allowed,
                )
            )
        if baseline_unknown:  # a baseline written before guarddiag recorded guards: their growth is not checked
            findings.append(Finding("guards_unknown", path, path, None))
        for b in script.functions if script else ():
            if b.key not in seen:
                findings.append(Finding("gone", path, b.file, b.line, name=b.name))
        findings += _divergences(path, report, settings)
    margin = LatencyMargin(settings.guard_latency_factor, settings.guard_latency_floor_us) if latency_gated else None
    return GateResult(tuple(rows), tuple(findings), settings.source, _torch_change(reports, baseline, findings), margin)


def _torch_change(reports: dict[str, RunReport], baseline: Baseline | None, findings: list[Finding]) -> TorchChange | None:
    """The baseline's torch and the runs' when a count moved against the baseline and the two are not the same."""
    if baseline is None or not any(f.kind in _MOVED and f.function is not None for f in findings):
        return None
    now = sorted({r.run.torch_version for r in reports.values() if r.run.torch_version})
    change = TorchChange(baseline.torch_version, ", ".join(now) or None)
    return None if change.baseline is not None and change.baseline == change.now else change


def _divergences(path: str, report: RunReport, settings: Settings) -> list[Finding]:
    """The run's rank divergence (its report's), failing under ``fail_on_rank_divergence`` (shown either
    way); each finding points at the function as the first rank that did not behave as most did compiled it."""
    found = []
    for d in report.divergence:
        odd = {r for g in d.unusual for r in g.ranks}
        function = next((f for rank, f in d.per_rank if rank in odd), d.function)
        found.append(
            Finding(
                "rank_divergence",
                path,
                relative_file(function.file, settings.root),
                function.line,
                function,
                function.name,
                divergence=d,
                gating=settings.fail_on_rank_divergence,
            )
        )
    return found
