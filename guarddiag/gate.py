"""The CI gate: compare runs with the baseline and thresholds. Pure: no I/O, no printing.

A function's recompiles fail the gate when they exceed what it is allowed:
its ``budget`` in the baseline, else the script's ``max_recompiles``, else what the baseline
recorded, else 0 for a function the baseline does not know; ``--max-recompiles`` caps every
function on top. A script that failed is reported as failed, never as a regression.
"""

from __future__ import annotations

from dataclasses import dataclass

from guarddiag.baseline import Baseline, BaselineFunction, BaselineScript, relative_file
from guarddiag.config import Settings
from guarddiag.errors import OK, REGRESSION, SCRIPT_FAILED
from guarddiag.model import FunctionSummary, Run, capture_gap, cause_groups, function_label, script_outcome
from guarddiag.render.summary import limit_sentence

FAILING = frozenset({"regression", "limit_hit", "new_cause", "script_failed"})


@dataclass(frozen=True)
class Finding:
    """One thing the gate has to say about a script or a function."""

    kind: str  # regression | limit_hit | new_cause | script_failed | improvement | gone
    script: str
    function: str
    file: str
    line: int | None
    message: str
    details: tuple[str, ...] = ()

    @property
    def failing(self) -> bool:
        return self.kind in FAILING


@dataclass(frozen=True)
class Row:
    """One checked function: what the baseline said, what happened, what is allowed."""

    script: str
    function: str
    file: str
    line: int | None
    before: int | None
    after: int
    allowed: int | None
    status: str
    limit_hits_before: int | None = None
    limit_hits: int = 0


@dataclass(frozen=True)
class GateResult:
    """Everything ``check`` reports; ``exit_code`` is what the command exits with."""

    rows: tuple[Row, ...]
    findings: tuple[Finding, ...]

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.failing)

    @property
    def improvements(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == "improvement")

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
        base = by_key.get((f.rank, f.name, rel, f.line))
        if base is not None:
            matched[i] = base
    taken = {b.key for b in matched.values()}
    unmatched: dict[tuple[str, str, str], list[int]] = {}
    for i, (f, rel) in enumerate(functions):
        if i not in matched:
            unmatched.setdefault((f.rank, f.name, rel), []).append(i)
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


def evaluate(
    runs: dict[str, Run],
    baseline: Baseline | None,
    settings: Settings,
    budgets: dict[str, int | None] | None = None,
) -> GateResult:
    """Check each script's run against the baseline and thresholds (``budgets``: per-script max from config)."""
    rows: list[Row] = []
    findings: list[Finding] = []
    for path, run in runs.items():
        gap = capture_gap(run)
        if run.status != "ok" or gap:
            findings.append(
                Finding(
                    "script_failed",
                    path,
                    "",
                    path,
                    None,
                    f"{path}: {script_outcome(run) if run.status != 'ok' else gap}; not compared with the baseline"
                    + (f"; torch log: {run.log_path}" if run.log_path else ""),
                )
            )
            continue
        script = baseline.script(path) if baseline else None
        if baseline is not None and script is None:
            findings.append(Finding("gone", path, "", path, None, f"{path}: not in the baseline; `--update` adds it"))
        ordered = [(f, relative_file(f.file, settings.root)) for f in sorted(run.functions, key=lambda f: (-f.recompiles, f.name))]
        matches = _match(ordered, script)
        seen = {b.key for b in matches.values()}
        for i, (f, rel) in enumerate(ordered):
            base = matches.get(i)
            allowed = _allowed(base, script, (budgets or {}).get(path), baseline is not None)
            if settings.max_recompiles is not None:
                allowed = settings.max_recompiles if allowed is None else min(allowed, settings.max_recompiles)
            label = function_label(f)
            groups = tuple(f"{g.count}x {g.category}: {g.subject}" for g in cause_groups(f))
            status = "new" if base is None and baseline is not None and script is not None else "ok"
            if allowed is not None and f.recompiles > allowed:
                status = "REGRESSION"
                was = f"baseline {base.recompiles}" if base is not None else "not in the baseline"
                findings.append(
                    Finding(
                        "regression",
                        path,
                        label,
                        rel,
                        f.line,
                        f"{label}: {f.recompiles} recompiles, {f.recompiles - allowed} over the {allowed} allowed ({was})",
                        groups,
                    )
                )
            elif base is not None and f.recompiles < base.recompiles:
                status = "improved"
                findings.append(
                    Finding(
                        "improvement",
                        path,
                        label,
                        rel,
                        f.line,
                        f"{label}: {f.recompiles} recompiles, down from {base.recompiles}; "
                        "record it with `guarddiag check --update`",
                    )
                )
            # A limit hit caps the recompile count, so counts cannot show it: more hits than the
            # baseline recorded (a function new to it recorded none) is a regression even without
            # --fail-on-limit-hit: past the limit the function runs without compiling.
            new_hits = baseline is not None and len(f.limit_hits) > (base.limit_hits if base is not None else 0)
            if (settings.fail_on_limit_hit or new_hits) and f.limit_hit:
                status = "REGRESSION"
                findings.append(Finding("limit_hit", path, label, rel, f.line, f"{label}: {limit_sentence(f.limit_hits[0])}", groups))
            if settings.fail_on_new_cause and base is not None:
                new = sorted({c for c in (e.causes[0].category for e in f.recompile_events if e.causes)} - dict(base.causes).keys())
                if new:
                    status = "REGRESSION"
                    findings.append(
                        Finding(
                            "new_cause",
                            path,
                            label,
                            rel,
                            f.line,
                            f"{label}: recompiles for a cause the baseline did not have: {', '.join(new)}",
                            tuple(g for g in groups if g.split(": ")[0].split(" ")[1] in new),
                        )
                    )
            rows.append(
                Row(
                    path, label, rel, f.line, base.recompiles if base else None, f.recompiles, allowed, status,
                    base.limit_hits if base else None, len(f.limit_hits),
                )
            )
        for b in script.functions if script else ():
            if b.key not in seen:
                message = f"{b.name} ({b.file}:{b.line}): in the baseline, not compiled in this run"
                findings.append(Finding("gone", path, b.name, b.file, b.line, message))
    return GateResult(tuple(rows), tuple(findings))

