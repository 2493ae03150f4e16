"""``guarddiag compare``: plan the configurations, run them in parallel, diff each against the baseline.

Planning is pure (catalog + options in, plan out; without ``--flag``, the baseline run's causes too:
:func:`guarddiag.flips.plan_flips`); running goes through the runner (``guarddiag.commands.compare``);
:func:`build_report` diffs each configuration against the baseline once and measures what each flip
did to each cause of the baseline, and ``guarddiag.render.compare`` words the report in every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from guarddiag.diff import CauseKey, RunDiff, cause_key, diff_runs
from guarddiag.diff import cause_counts as diff_cause_counts
from guarddiag.divergence import Divergence, DivergenceChange, divergence_change
from guarddiag.errors import InputError
from guarddiag.flags import Catalog, Flag, free_text, parse_value
from guarddiag.flips import KEEPS_COMPILED, Candidate, FlipPlan, Target, flip_effect, plan_flips
from guarddiag.guardfigures import GuardFigures, run_figures
from guarddiag.guardfilters import GUARD_FILTERS, filter_config, filter_spec, is_filter
from guarddiag.ids import FunctionKey
from guarddiag.model import FunctionSummary, Run
from guarddiag.report import RunReport


@dataclass(frozen=True)
class Variant:
    """One configuration to run: an interpreter and the flags set in it."""

    label: str
    python: str
    flags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class NoOp:
    """A flag left out of the plan: it does nothing in this torch (``reason``: torch's own word for why)."""

    flag: str
    torch_version: str
    reason: str


@dataclass(frozen=True)
class ComparePlan:
    """The baseline, the variants to diff against it, and flags left out because they do nothing."""

    baseline: Variant
    variants: tuple[Variant, ...]
    no_ops: tuple[NoOp, ...] = ()


def _format_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _values_for(flag: Flag, spec_values: list[str]) -> list[str]:
    if spec_values:
        for raw in spec_values:
            parse_value(flag, raw)
        return spec_values
    if flag.is_bool:
        return [_format_value(not bool(flag.value))]
    if flag.choices_only:
        # A Literal[...] flag: try every value it takes but the one in force.
        others = [_format_value(c) for c in flag.choices if c != flag.value and c is not None]
        if others:
            return others
    raise InputError(
        f"--flag {flag.name}: it is a {flag.type} (now {flag.value!r}), not a boolean; give the values to try: "
        f"--flag {flag.name}=V1,V2"
    )


def plan_compare(catalog: Catalog, specs: list[str], combined: bool, pythons: list[str]) -> ComparePlan:
    """Turn ``--flag NAME[=V1,V2]`` options (and one or two ``--python``) into runs."""
    if len(pythons) > 2:
        raise InputError("--python given more than twice; compare takes one interpreter, or two to compare environments")
    if len(pythons) == 2 and combined:
        raise InputError("--combined goes with --flag options, not with two --python; drop one of them")
    if combined and not specs:
        raise InputError("--combined runs the --flag flips together: give two --flag options or more, or drop --combined")
    python = pythons[0]
    baseline = Variant("baseline", python)
    variants: list[Variant] = []
    no_ops: list[NoOp] = []
    chosen: list[tuple[str, str]] = []
    for spec in specs:
        name, _, values = spec.partition("=")
        if is_filter(name.strip()):
            # A guard filter is a torch.compile option: one configuration per helper named.
            if not values.strip():
                raise InputError(f"--flag {name.strip()}: give the helper to try, e.g. {filter_spec(GUARD_FILTERS[0].name)}")
            for config in (filter_config(v) for v in values.split(",") if v.strip()):
                if config not in chosen:
                    chosen.append(config)
                    variants.append(Variant(f"{config[0]}={config[1]}", python, (config,)))
            continue
        flag = catalog.resolve(name.strip())
        target = catalog.target(flag)
        reason = flag.no_op_reason() or target.no_op_reason()
        if reason:
            no_ops.append(NoOp(flag.name, catalog.torch_version, reason))
            continue
        # A free-text flag takes commas in its one value (a list of sources); repeat --flag for several.
        raw = [values.strip()] if free_text(target) else values.split(",")
        for value in _values_for(target, [v.strip() for v in raw if v.strip()]):
            if (flag.name, value) in chosen:
                continue  # the same --flag given twice is one configuration to run
            chosen.append((flag.name, value))
            variants.append(Variant(f"{flag.name}={value}", python, ((flag.name, value),)))
    if combined and len(chosen) > 1:
        first = {}
        for name, value in chosen:
            first.setdefault(name, value)
        variants.append(Variant(" + ".join(f"{n}={v}" for n, v in first.items()), python, tuple(first.items())))
    if len(pythons) == 2:
        baseline = Variant(f"python {pythons[0]}", pythons[0])
        variants = [Variant(f"python {pythons[1]}", pythons[1])]
    return ComparePlan(baseline, tuple(variants), tuple(dict.fromkeys(no_ops)))


@dataclass(frozen=True)
class Unstable:
    """A function whose compile count differs between repeats of one configuration: noise, not the flag."""

    function: FunctionSummary
    compiles: tuple[int, ...]


@dataclass(frozen=True)
class OutputChange:
    """Where a configuration's stdout first differs from the baseline run's: ``line`` (1-based), and
    each side's text there (None: that output had ended)."""

    line: int
    baseline: str | None
    variant: str | None


def first_difference(baseline: str, variant: str) -> OutputChange | None:
    """The first line where two captured outputs differ; None when they are the same."""
    if baseline == variant:
        return None
    a, b = baseline.splitlines(), variant.splitlines()
    for i in range(max(len(a), len(b))):
        left, right = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if left != right:
            return OutputChange(i + 1, left, right)
    # The same lines, other line endings or a missing final newline: the last line differs.
    return OutputChange(max(len(a), 1), a[-1] if a else "", b[-1] if b else "")


@dataclass(frozen=True)
class VariantResult:
    """All repeats of one configuration; the first is the one diffed. ``stdout_change``: where its
    first run printed something else than the baseline's first run (None: the same, or not known);
    ``stdout_compared``: both outputs were there to compare, and neither configuration's repeats printed
    different things (``stdout_varies``: where they did)."""

    variant: Variant
    # Each repeat's report value (its run, and the rank divergence its record holds: computed once, by build).
    reports: tuple[RunReport, ...]
    unstable: tuple[Unstable, ...] = field(default=())
    stdout_change: OutputChange | None = None
    stdout_compared: bool = False
    # Where the repeats of this configuration printed different things (--repeat): its output tells nothing of a flip.
    stdout_varies: OutputChange | None = None

    @property
    def report(self) -> RunReport:
        """The first repeat's report value: the one diffed."""
        return self.reports[0]

    @property
    def runs(self) -> tuple[Run, ...]:
        return tuple(r.run for r in self.reports)

    @property
    def run(self) -> Run:
        return self.reports[0].run

    @property
    def folders(self) -> tuple[str, ...]:
        """The run folder of each repeat (``.guarddiag/runs/<id>``): its log, record and captured output."""
        return tuple(str(Path(run.log_path).parent) for run in self.runs if run.log_path)


def unstable_functions(runs: tuple[Run, ...]) -> tuple[Unstable, ...]:
    """Functions whose compile counts differ between repeats (0 where a repeat did not compile it)."""
    counts: dict[FunctionKey, set[int]] = {}
    functions: dict[FunctionKey, FunctionSummary] = {}
    for run in runs:
        seen = {f.key: f.compiles for f in run.functions}
        functions.update({f.key: f for f in run.functions})
        for key in set(counts) | set(seen):
            counts.setdefault(key, set()).add(seen.get(key, 0))
    # In the order of the keys' text (a line may be None, which does not compare with a number).
    ordered = sorted(counts.items(), key=lambda item: str(item[0]))
    return tuple(Unstable(functions[key], tuple(sorted(n))) for key, n in ordered if len(n) > 1)


@dataclass(frozen=True)
class FlipOutcome:
    """What one configuration of one flip did to one cause of the baseline, measured.

    ``before``/``after``: the cause's recompiles in the baseline's first run and in the flip's (``after``
    None: the flip's run did not finish cleanly, ``status`` says how it ended); ``limit_hits_*``,
    ``compiles_*``: the function's, in both runs; ``compile_s_*``: the whole run's compile seconds (None
    when torch's record of times is not there); ``added``: recompiles of the function's other causes the flip added;
    ``stdout_changed``: the flip's run printed something else than the baseline's (None: not known);
    ``unstable``: the function's compile count varied between repeats of the flip; ``run_*`` and
    ``graph_breaks_*``: the whole run's recompiles, limit hits and graph breaks in both (a flip can move
    recompiles to another function: a graph break it causes makes new ones); ``failed_*``: the function's
    compiles that installed no code, ``run_failed_*`` the whole run's (a compile that fails under
    ``suppress_errors`` runs its calls eagerly, with no recompile); ``refused_*``: the function's calls a
    compiler stance refused to recompile for the cause (each ran eagerly), ``run_refused_*`` the whole run's."""

    flag: str
    value: str
    effect: str
    cost: str
    before: int
    after: int | None
    limit_hits_before: int
    limit_hits_after: int
    compiles_before: int
    compiles_after: int
    compile_s_before: float | None
    compile_s_after: float | None
    added: int
    status: str
    stdout_changed: bool | None
    unstable: bool = False
    candidate: bool = True
    run_recompiles_before: int = 0
    run_recompiles_after: int = 0
    run_limit_hits_before: int = 0
    run_limit_hits_after: int = 0
    graph_breaks_before: int = 0
    graph_breaks_after: int = 0
    failed_before: int = 0
    failed_after: int = 0
    run_failed_before: int = 0
    run_failed_after: int = 0
    # The other flips of a configuration that set several together (--combined, a hint of several settings).
    also: tuple[tuple[str, str], ...] = ()
    refused_before: int = 0
    refused_after: int = 0
    run_refused_before: int = 0
    run_refused_after: int = 0

    @property
    def configs(self) -> tuple[tuple[str, str], ...]:
        """Every flip the configuration set: (flag, value) each."""
        return ((self.flag, self.value), *self.also)

    @property
    def lost_compiled_code(self) -> bool:
        """The flip made compiles fail (in the function or anywhere in the run), or left the function with no
        compile that installed code where the baseline had one: its calls ran eagerly, not compiled."""
        if self.status != "ok":
            return False
        if self.failed_after > self.failed_before or self.run_failed_after > self.run_failed_before:
            return True
        return self.compiles_after - self.failed_after <= 0 < self.compiles_before - self.failed_before

    @property
    def fewer_in_run(self) -> bool:
        """The whole run recompiled (or hit the limit, or had calls a stance refused) less with the flip than without."""
        before = self.run_recompiles_before + self.run_limit_hits_before + self.run_refused_before
        return self.run_recompiles_after + self.run_limit_hits_after + self.run_refused_after < before

    @property
    def served(self) -> int:
        """Calls a compiler stance refused for the cause in the baseline that an entry took with the flip."""
        return max(self.refused_before - self.refused_after, 0) if self.status == "ok" else 0

    @property
    def removed(self) -> int:
        """Recompiles of the cause the flip removed (0 when its run did not finish)."""
        return max(self.before - self.after, 0) if self.after is not None else 0

    @property
    def keeps_compiled(self) -> bool:
        """Calls refused at the recompile limit in the baseline are compiled with the flip."""
        return self.status == "ok" and self.limit_hits_before > 0 and self.limit_hits_after == 0

    @property
    def works(self) -> bool:
        """Whether the flip did what it is for: removed recompiles of the cause with fewer in the whole run
        (or, a raised limit, kept the refused calls compiled), in a run that finished and was the same each time."""
        if self.status != "ok" or self.unstable or self.lost_compiled_code:
            return False
        if self.effect == KEEPS_COMPILED:
            return self.keeps_compiled
        # Recompiles moved elsewhere (another function, a graph break's resume function) are not removed.
        return (self.removed > 0 or self.keeps_compiled or self.served > 0) and self.fewer_in_run


@dataclass(frozen=True)
class CauseResult:
    """A cause of the baseline (a :class:`guarddiag.flips.Target`) and what every single-flip
    configuration run did to it: its candidates first, then other flips that removed some of it."""

    target: Target
    outcomes: tuple[FlipOutcome, ...]
    not_run: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CompareReport:
    """Everything ``compare`` reports: the plan, every configuration's runs, each one diffed against the
    baseline, and (one interpreter) what each flip did to each cause of the baseline (built once; every
    format and ``--out`` render this). ``flips``: the plan of ``compare`` without ``--flag`` (None with it).
    ``divergence``: each configuration's rank divergence (of its first run, as ``results``), and
    ``divergence_changes`` what each did to the baseline's (None for the baseline itself)."""

    torch_version: str
    plan: ComparePlan
    results: tuple[VariantResult, ...]
    diffs: tuple[RunDiff, ...]
    flips: FlipPlan | None = None
    causes: tuple[CauseResult, ...] = ()
    # Runs at a time: the flips shared the cores with each other (compile times are each run's own).
    parallel: int = 1
    divergence: tuple[tuple[Divergence, ...], ...] = ()
    divergence_changes: tuple[DivergenceChange | None, ...] = ()
    # Each configuration's guard count and latency per function (of its first run, as ``results``).
    guards: tuple[tuple[GuardFigures, ...], ...] = ()


def flip_variants(flips: FlipPlan, python: str) -> tuple[Variant, ...]:
    """One configuration per planned flip, and per planned combination of flips."""
    return tuple(Variant(" + ".join(f"{f}={v}" for f, v in config), python, config) for config in flips.configurations)


def build_report(
    plan: ComparePlan, results: list[VariantResult], catalog: Catalog, flips: FlipPlan | None = None, parallel: int = 1
) -> CompareReport:
    """Diff the first run of each configuration against the baseline's first run, and measure what each
    single-flip configuration did to each cause of the baseline (``parallel``: runs at a time)."""
    diffs: tuple[RunDiff, ...] = ()
    causes: tuple[CauseResult, ...] = ()
    if results:
        base = results[0]
        diffs = tuple(diff_runs(base.run, r.run, base.variant.label, r.variant.label) for r in results[1:])
        if base.variant.flags == () and all(r.variant.python == base.variant.python for r in results):
            targets = flips.targets if flips is not None else cause_targets(catalog, base.run)
            causes = tuple(_cause_result(t, base, results[1:], flips) for t in targets)
    # Each configuration's rank divergence, as its first run's report value holds it (its record lists the same).
    divergence = tuple(r.report.divergence for r in results)
    changes = tuple(None if i == 0 else divergence_change(divergence[0], found) for i, found in enumerate(divergence))
    guards = tuple(run_figures(r.run) for r in results)
    return CompareReport(catalog.torch_version, plan, tuple(results), diffs, flips, causes, parallel, divergence, changes, guards)


def cause_targets(catalog: Catalog, baseline: Run) -> tuple[Target, ...]:
    """The causes of a baseline run, as the plan would aim at them (with ``--flag``: what to measure)."""
    return plan_flips(catalog, baseline, 0).targets


def _cause_result(target: Target, base: VariantResult, others: tuple[VariantResult, ...] | list[VariantResult],
                  flips: FlipPlan | None) -> CauseResult:
    candidates = {c.config: c for c in target.candidates}
    outcomes = []
    for result in others:
        if not result.variant.flags:
            continue  # the same interpreter given twice (--python): no flip to measure
        if any(is_filter(flag) for flag, _ in result.variant.flags):
            # A guard filter hides a cause's recompiles by not checking it (old code runs): never a fix of it,
            # nor a verdict; its recompiles before -> after are in the diff and the guard rows.
            continue
        config, *also = result.variant.flags
        if also:
            # Several flips run together (--combined, a hint of several settings): measured as one configuration,
            # kept for a cause one of them answers, or that it helped.
            outcome = replace(_outcome(target, base.run, result, None, config), also=tuple(also))
            keep = outcome.works or any(c in candidates for c in result.variant.flags)
        else:
            outcome = _outcome(target, base.run, result, candidates.get(config), config)
            keep = outcome.candidate or outcome.works
        if keep:
            outcomes.append(outcome)
    outcomes.sort(key=lambda o: not o.candidate)
    capped = tuple(c.config for c in target.candidates if flips is not None and c.config in flips.capped)
    return CauseResult(target, tuple(outcomes), capped)


def _function(run: Run, key: FunctionKey) -> FunctionSummary | None:
    """The function of ``run`` with this key, or with its file's base name (as diff pairs functions)."""
    exact = next((f for f in run.functions if f.key == key), None)
    if exact is not None:
        return exact
    base = key._replace(file=key.file.replace("\\", "/").rpartition("/")[2])
    return next((f for f in run.functions if f.key._replace(file=f.key.file.replace("\\", "/").rpartition("/")[2]) == base), None)


def _refused_for(f: FunctionSummary | None, key: CauseKey) -> int:
    """The calls of a function a compiler stance refused for one cause (0: not run, or none)."""
    return sum(r.calls for r in f.refusals if r.cause is not None and cause_key(r.cause) == key) if f is not None else 0


def _outcome(target: Target, base: Run, result: VariantResult, candidate: Candidate | None, config: tuple[str, str]) -> FlipOutcome:
    before_f = target.function
    after_f = _function(result.run, target.function_key)
    counts = diff_cause_counts(after_f)
    effect, cost = (candidate.effect, candidate.cost) if candidate else flip_effect(config[0])
    after = counts.get(target.key, 0) if result.run.status == "ok" else None
    others_before = sum(n for k, n in diff_cause_counts(before_f).items() if k != target.key)
    others_after = sum(n for k, n in counts.items() if k != target.key)
    return FlipOutcome(
        flag=config[0],
        value=config[1],
        effect=effect,
        cost=cost,
        before=target.recompiles,
        after=after,
        limit_hits_before=len(before_f.limit_hits),
        limit_hits_after=len(after_f.limit_hits) if after_f else 0,
        compiles_before=before_f.compiles,
        compiles_after=after_f.compiles if after_f else 0,
        compile_s_before=base.compile_s,
        compile_s_after=result.run.compile_s,
        added=max(others_after - others_before, 0),
        status=result.run.status,
        stdout_changed=result.stdout_change is not None if result.stdout_compared else None,
        unstable=any(u.function.key == target.function_key for u in result.unstable),
        candidate=candidate is not None,
        run_recompiles_before=base.recompiles,
        run_recompiles_after=result.run.recompiles,
        run_limit_hits_before=base.limit_hits,
        run_limit_hits_after=result.run.limit_hits,
        graph_breaks_before=base.graph_breaks,
        graph_breaks_after=result.run.graph_breaks,
        failed_before=len(before_f.failed_compiles),
        failed_after=len(after_f.failed_compiles) if after_f else 0,
        run_failed_before=sum(len(f.failed_compiles) for f in base.functions),
        run_failed_after=sum(len(f.failed_compiles) for f in result.run.functions),
        refused_before=target.refused,
        refused_after=_refused_for(after_f, target.key),
        run_refused_before=base.refused_calls,
        run_refused_after=result.run.refused_calls,
    )
