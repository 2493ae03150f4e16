"""``guarddiag compare``: plan the configurations, run them in parallel, diff each against the baseline.

Planning is pure (catalog + options in, plan out); running goes through the runner
(``guarddiag.commands.compare``); :func:`build_report` diffs each configuration against the
baseline once, and ``guarddiag.render.compare`` words the report in every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from guarddiag.diff import RunDiff, diff_runs
from guarddiag.errors import InputError
from guarddiag.flags import Catalog, Flag, parse_value
from guarddiag.ids import FunctionKey
from guarddiag.model import FunctionSummary, Run


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
    if not specs and len(pythons) < 2:
        raise InputError("nothing to compare: give --flag NAME[=V1,V2] (see `guarddiag flags`) or --python twice")
    python = pythons[0]
    baseline = Variant("baseline", python)
    variants: list[Variant] = []
    no_ops: list[NoOp] = []
    chosen: list[tuple[str, str]] = []
    for spec in specs:
        name, _, values = spec.partition("=")
        flag = catalog.resolve(name.strip())
        target = catalog.target(flag)
        reason = flag.no_op_reason() or target.no_op_reason()
        if reason:
            no_ops.append(NoOp(flag.name, catalog.torch_version, reason))
            continue
        for value in _values_for(target, [v.strip() for v in values.split(",") if v.strip()]):
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
    first run printed something else than the baseline's first run (None: the same, or not known)."""

    variant: Variant
    runs: tuple[Run, ...]
    unstable: tuple[Unstable, ...] = field(default=())
    stdout_change: OutputChange | None = None

    @property
    def run(self) -> Run:
        return self.runs[0]

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
class CompareReport:
    """Everything ``compare`` reports: the plan, every configuration's runs, and each one diffed
    against the baseline (built once; every format and ``--out`` render this)."""

    torch_version: str
    plan: ComparePlan
    results: tuple[VariantResult, ...]
    diffs: tuple[RunDiff, ...]


def build_report(plan: ComparePlan, results: list[VariantResult], catalog: Catalog) -> CompareReport:
    """Diff the first run of each configuration against the baseline's first run."""
    diffs: tuple[RunDiff, ...] = ()
    if results:
        base = results[0]
        diffs = tuple(diff_runs(base.run, r.run, base.variant.label, r.variant.label) for r in results[1:])
    return CompareReport(catalog.torch_version, plan, tuple(results), diffs)
