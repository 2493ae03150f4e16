"""Renderers for ``check``: terminal table, Markdown (step summary), JSON/YAML, JUnit XML, GitHub annotations.

JSON/YAML schema versions (``schema`` key):
  guarddiag.check/1 -- first version: ``exit_code``, ``verdict``, ``rows[]`` (one per checked
  function) and ``findings[]`` (facts, plus the ``message`` and ``details`` the table shows).
  Added since, optional for readers: ``settings_file`` (the settings file in force, null: none found)
  and ``torch`` (``{baseline, now}``, null unless a count moved against a baseline of another or an
  unknown torch; each null when not known); per row ``refused_calls`` and ``refused_calls_baseline``
  (calls a compiler stance refused to recompile), and the finding kind ``refused``; per row ``guards``,
  ``guards_baseline``, ``guards_allowed``, ``guard_latency_us``, ``guard_latency_us_baseline``,
  ``guard_latency_us_allowed`` (null: not known, or not gated), per finding ``guard`` (``{measure, now,
  baseline, allowed, budget, margin}``), top-level ``guard_latency_margin`` (``{factor, floor_us}``, null
  unless a latency was gated), and the finding kinds ``guard_count_grew``, ``guard_latency_grew``,
  ``over_guard_budget`` (failing), ``guard_count_fell`` and ``guards_unknown``.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from itertools import groupby

from tabulate import tabulate

from guarddiag.divergence import divergence_to_dict
from guarddiag.gate import GUARD_FAILING, GUARD_KINDS, Finding, GateResult, GuardCheck, Row, TorchChange
from guarddiag.guardbudget import GatedFigures, LatencyMargin
from guarddiag.render import escape
from guarddiag.render.divergence import divergence_label, divergence_sentence
from guarddiag.render.formats import render_as
from guarddiag.render.job import logs_at
from guarddiag.render.summary import cause_group_line, cause_groups, refusal_group_line, refusal_groups
from guarddiag.render.words import (
    capture_gap,
    function_label,
    limit_sentence,
    micros,
    place_label,
    script_outcome,
    uncounted_stance_sentence,
    unobserved_sentence,
)
from guarddiag.report import RunReport

CHECK_SCHEMA = "guarddiag.check/1"
_HEADERS = ["script", "function", "baseline", "now", "allowed", "limit hits", "status"]


def _headers(result: GateResult) -> list[str]:
    """The table's columns; ``refused`` only where a function's calls were refused (now or in the baseline),
    ``guards`` and ``guard latency`` only where the gate has something to say of a function's guards (the
    figures of every function are in the JSON form)."""
    guards = ["guards", "guard latency"] if _any_guards(result) else []
    return _HEADERS[:-1] + (["refused"] if _any_refused(result) else []) + guards + _HEADERS[-1:]


def _any_guards(result: GateResult) -> bool:
    return any(f.kind in GUARD_KINDS for f in result.findings)


def _any_refused(result: GateResult) -> bool:
    return any(r.refused or r.refused_before for r in result.rows)


def _rows(result: GateResult) -> list[list[object]]:
    refused = _any_refused(result)
    guards = _any_guards(result)
    return [
        [
            r.script,
            function_label(r.function),
            "-" if r.before is None else r.before,
            r.after,
            "-" if r.allowed is None else r.allowed,
            _limit_cell(r.limit_hits_before, r.limit_hits),
            *([_limit_cell(r.refused_before, r.refused)] if refused else []),
            *([_guards_cell(r), _latency_cell(r)] if guards else []),
            r.status,
        ]
        for r in result.rows
    ]


def _figure_change(before: str | None, now: str | None, allowed: str | None) -> str:
    """``279 -> 280 (max 279)``: a guard figure, baseline -> now, with what it may reach when gated."""
    cap = f" (max {allowed})" if allowed is not None else ""
    return f"{before or 'not known'} -> {now or 'not known'}{cap}"


def _guards_cell(r: Row) -> str:
    before, now = r.guards_before.guards, r.guards.guards
    return _figure_change(
        None if before is None else str(before),
        None if now is None else str(now),
        None if r.guards_allowed is None else str(r.guards_allowed),
    )


def _latency_cell(r: Row) -> str:
    before, now = r.guards_before.latency_us, r.guards.latency_us
    allowed = r.latency_allowed
    return _figure_change(
        None if before is None else micros(before), None if now is None else micros(now), None if allowed is None else micros(allowed)
    )


def _limit_cell(before: int | None, now: int) -> str:
    """Limit hits (or refused calls), baseline -> now, where there are any."""
    if not now and not before:
        return ""
    return f"{'-' if before is None else before} -> {now}"


def _verdict(result: GateResult) -> str:
    failed = [f for f in result.findings if f.kind == "script_failed"]
    if failed:
        return f"FAILED: {len(failed)} script(s) did not run to the end; fix them first"
    if result.failures:
        diverging = sum(f.kind == "rank_divergence" for f in result.failures)
        guards = sum(f.kind in GUARD_FAILING for f in result.failures)
        regressions = len(result.failures) - diverging - guards
        parts = (
            [f"{regressions} recompile regression(s)"] * bool(regressions)
            + [f"{guards} guard regression(s)"] * bool(guards)
            + [f"{diverging} rank divergence(s)"] * bool(diverging)
        )
        return f"FAILED: {', '.join(parts)}"
    note = f"; {len(result.improvements)} improvement(s), record with `guarddiag check --update`" if result.improvements else ""
    return f"OK: no recompile regression{note}"


def settings_line(result: GateResult) -> str:
    """Which settings file ``check`` used, relative to the current folder (``../pyproject.toml``), or that none was found."""
    if not result.settings_file:
        return "settings: none found (no guarddiag.yaml or [tool.guarddiag] here or above)"
    shown = os.path.relpath(result.settings_file) if os.path.isabs(result.settings_file) else result.settings_file
    table = " [tool.guarddiag]" if os.path.basename(shown) == "pyproject.toml" else ""
    return f"settings: {shown}{table}"


def torch_line(change: TorchChange) -> str:
    """That torch changed since the baseline (or is not known), for a report that shows counts that moved."""
    why = "counts can move with torch itself: record the baseline again on this torch (`guarddiag check --update`) to compare alike"
    before, now = change.baseline, change.now
    if before is None:
        return f"note: the baseline does not say which torch recorded it (torch now: {now or 'not known'}); {why}"
    if now is None:
        return f"note: the run records do not say which torch ran them (the baseline's: {before}); {why}"
    return f"note: torch changed since the baseline, from {before} to {now}; {why}"


def latency_line(margin: LatencyMargin) -> str:
    """Why guard latency is gated with a margin, and the margin, for a report that gated one."""
    return (
        "note: guard latency (torch's compile-time check of a function's cheapest cache entry) is measured once, with a cold "
        f"CPU cache, and varies from run to run: it is gated with a margin, x{margin.factor:g} or +{micros(margin.floor_us)} "
        "over the baseline, whichever is more"
    )


def _guard_message(f: Finding, label: str) -> str:
    """A guard finding in one line."""
    check = f.guard
    if f.kind == "guards_unknown":
        if f.function is None:
            return (
                f"{f.script}: the baseline has no guard figures for its functions (written before guarddiag recorded them): "
                "their guards are not checked against it; record them with `guarddiag check --update`"
            )
        what = " and ".join("guard count" if m == "guards" else "guard latency" for m in f.categories)
        return (
            f"{label}: {what} not known in this run (torch before 2.6, a log without the guards channel, "
            "or a record without torch's figures): not checked"
        )
    assert check is not None and check.now is not None, "a guard finding carries its figure"
    if check.measure == "guards":
        now, before, allowed = int(check.now), check.baseline, check.allowed
        if f.kind == "guard_count_fell":
            return f"{label}: {now} guards in its largest cache entry, down from {before:.0f}; record it with `guarddiag check --update`"
        if f.kind == "guard_count_grew":
            return (
                f"{label}: {now} guards in its largest cache entry, {now - int(before or 0)} more than the baseline's {before:.0f} "
                "(the same code on the same torch has the same guards)"
            )
        was = f"baseline {before:.0f}" if before is not None else "not known in the baseline"
        return f"{label}: {now} guards in its largest cache entry, {now - int(allowed or 0)} over the budget of {allowed:.0f} ({was})"
    figure = f"guard check of its cheapest cache entry {micros(check.now)} (torch's compile-time figure)"
    if f.kind == "guard_latency_grew":
        margin = check.margin or LatencyMargin()
        return (
            f"{label}: {figure}, past the {micros(check.allowed or 0)} allowed: baseline {micros(check.baseline or 0)}, "
            f"x{margin.factor:g} or +{micros(margin.floor_us)} (torch measures it once, cold: the margin takes its noise)"
        )
    was = f"baseline {micros(check.baseline)}" if check.baseline is not None else "not known in the baseline"
    return (
        f"{label}: {figure}, over the budget of {micros(check.allowed or 0)} ({was}; torch measures it once, cold: "
        "a budget needs room above the usual figure)"
    )


def finding_message(f: Finding) -> str:
    """The finding in one line: ``forward (model.py:30): 7 recompiles, 2 over the 5 allowed (baseline 5)``."""
    if f.kind == "script_failed":
        assert f.report is not None, "a script_failed finding carries its run's report"
        run = f.report.run
        why = script_outcome(run) if run.status != "ok" else capture_gap(run, f.report.gaps) or _too_low(f.report)
        log = f"; {logs_at(run)}" if run.log_path else ""
        return f"{f.script}: {why}; not compared with the baseline{log}"
    if f.kind == "limits_unknown":
        return (f"{f.script}: read from a TORCH_TRACE of torch < 2.5, which records no call refused at a recompile limit: "
                "its limit hits are not checked (check the run's text log, or run the script with `guarddiag check`)")
    if f.kind == "guards_unknown" and f.function is None:
        return _guard_message(f, "")
    if f.function is None:
        if f.kind == "gone" and f.name:
            return f"{place_label(f.name, f.file, f.line)}: in the baseline, not compiled in this run"
        return f"{f.script}: not in the baseline; `--update` adds it"
    label, recompiles = function_label(f.function), f.function.recompiles
    if f.kind in GUARD_KINDS:
        return _guard_message(f, label)
    if f.kind == "regression":
        assert f.allowed is not None, "a regression is measured against what is allowed"
        was = f"baseline {f.baseline}" if f.baseline is not None else "not in the baseline"
        return f"{label}: {recompiles} recompiles, {recompiles - f.allowed} over the {f.allowed} allowed ({was})"
    if f.kind == "improvement":
        return f"{label}: {recompiles} recompiles, down from {f.baseline}; record it with `guarddiag check --update`"
    if f.kind == "limit_hit":
        return f"{label}: {limit_sentence(f.function.limit_hits[0])}"
    if f.kind == "refused":
        assert f.allowed is not None, "refused calls are measured against what is allowed"
        calls = f.function.refused_calls
        was = f"baseline {f.baseline}" if f.baseline is not None else "not in the baseline"
        return (
            f"{label}: {calls} call{'s' if calls != 1 else ''} a compiler stance refused to recompile, "
            f"{calls - f.allowed} over the {f.allowed} allowed ({was}); those calls ran without compiled code"
        )
    if f.kind == "new_cause":
        return f"{label}: recompiles for a cause the baseline did not have: {', '.join(f.categories)}"
    if f.kind == "rank_divergence":
        assert f.divergence is not None, "a rank_divergence finding carries its comparison"
        gate = "" if f.gating else " (not failing: --fail-on-rank-divergence makes it fail)"
        return f"{divergence_label(f.divergence)}: {divergence_sentence(f.divergence)}{gate}"
    raise ValueError(f"unknown finding kind {f.kind!r}")


def _too_low(report: RunReport) -> str:
    """Why a run that finished has counts too low to compare: a process not observed, a stance not counted."""
    missed = report.uncounted
    return unobserved_sentence(missed[0]) if missed else uncounted_stance_sentence(report.uncounted_stances[0], report.run.torch_version)


def finding_details(f: Finding) -> list[str]:
    """The recompile causes behind a failing finding (for ``new_cause``: only the new categories; for
    ``refused``: the causes of the refused calls)."""
    if f.function is not None and f.kind == "refused":
        return [refusal_group_line(g) for g in refusal_groups(f.function)]
    if f.function is None or f.kind not in ("regression", "limit_hit", "new_cause"):
        return []
    groups = cause_groups(f.function)
    if f.kind == "new_cause":
        groups = [g for g in groups if g.category in f.categories]
    return [cause_group_line(g) for g in groups]


def _finding_lines(f: Finding) -> list[str]:
    return [f"{f.kind}: {finding_message(f)}", *(f"    {d}" for d in finding_details(f))]


def render_text(result: GateResult) -> str:
    """The terminal report: a table of every checked function, then what failed and what improved."""
    result = escape.visible_values(result)
    out = [tabulate(_rows(result), headers=_headers(result))] if result.rows else ["no compiled functions"]
    for f in result.findings:
        if f.kind != "gone":
            out += [""] + _finding_lines(f)
    gone = [f for f in result.findings if f.kind == "gone"]
    if gone:
        out += ["", *(f"note: {finding_message(f)}" for f in gone)]
    if result.torch is not None:
        out += ["", torch_line(result.torch)]
    if result.latency_margin is not None:
        out += ["", latency_line(result.latency_margin)]
    return "\n".join([*out, "", settings_line(result), _verdict(result)])


def render_check(result: GateResult, fmt: str) -> str:
    """The check report in one of :data:`guarddiag.render.FORMATS` (markdown: the step summary)."""
    return render_as(fmt, lambda: check_to_dict(result), lambda: render_markdown(result), lambda: render_text(result))


def check_to_dict(result: GateResult) -> dict[str, object]:
    """The JSON form of a check: every checked function and every finding, as facts."""
    return {
        "schema": CHECK_SCHEMA,
        "exit_code": result.exit_code,
        "verdict": _verdict(result),
        "settings_file": result.settings_file or None,
        "torch": {"baseline": result.torch.baseline, "now": result.torch.now} if result.torch is not None else None,
        "guard_latency_margin": _margin_dict(result.latency_margin),
        "rows": [
            {
                "script": r.script,
                "function": r.function.name,
                "label": function_label(r.function),
                "file": r.file,
                "line": r.line,
                "process": str(r.function.process),
                "baseline": r.before,
                "recompiles": r.after,
                "allowed": r.allowed,
                "limit_hits_baseline": r.limit_hits_before,
                "limit_hits": r.limit_hits,
                "refused_calls_baseline": r.refused_before,
                "refused_calls": r.refused,
                **_figures_dict(r.guards_before, r.guards, r.guards_allowed, r.latency_allowed),
                "status": r.status,
            }
            for r in result.rows
        ],
        "findings": [_finding_to_dict(f) for f in result.findings],
    }


def _margin_dict(margin: LatencyMargin | None) -> dict[str, float] | None:
    return None if margin is None else {"factor": margin.factor, "floor_us": margin.floor_us}


def _figures_dict(before: GatedFigures, now: GatedFigures, guards_allowed: int | None, latency_allowed: float | None) -> dict[str, object]:
    return {
        "guards_baseline": before.guards,
        "guards": now.guards,
        "guards_allowed": guards_allowed,
        "guard_latency_us_baseline": before.latency_us,
        "guard_latency_us": now.latency_us,
        "guard_latency_us_allowed": latency_allowed,
    }


def _guard_dict(check: GuardCheck | None) -> dict[str, object] | None:
    if check is None:
        return None
    return {
        "measure": check.measure,
        "now": check.now,
        "baseline": check.baseline,
        "allowed": check.allowed,
        "budget": check.budget,
        "margin": _margin_dict(check.margin),
    }


def _finding_to_dict(f: Finding) -> dict[str, object]:
    function = f.function
    return {
        "kind": f.kind,
        "failing": f.failing,
        "script": f.script,
        "function": function.name if function is not None else f.name,
        "file": f.file,
        "line": f.line,
        "recompiles": function.recompiles if function is not None else None,
        "allowed": f.allowed,
        "baseline": f.baseline,
        "categories": list(f.categories),
        "status": f.report.run.status if f.report is not None else None,
        "divergence": divergence_to_dict(f.divergence) if f.divergence is not None else None,
        "guard": _guard_dict(f.guard),
        "message": finding_message(f),
        "details": finding_details(f),
    }


def render_markdown(result: GateResult) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: a table (scripts and functions as code) and the findings."""
    result = escape.visible_values(result)
    out = ["## guarddiag check", "", f"**{escape.markdown_text(_verdict(result))}**", ""]
    if result.rows:
        code = escape.markdown_code
        rows = [[code(str(script), table=True), code(str(label), table=True), *rest] for script, label, *rest in _rows(result)]
        out.append(tabulate(rows, headers=_headers(result), tablefmt="github"))
    for f in result.findings:
        details = [f"  - {escape.markdown_text(d)}" for d in finding_details(f)]
        out += ["", f"- **{f.kind}** {escape.markdown_text(finding_message(f))}", *details]
    if result.torch is not None:
        out += ["", escape.markdown_text(torch_line(result.torch))]
    if result.latency_margin is not None:
        out += ["", escape.markdown_text(latency_line(result.latency_margin))]
    out += ["", escape.markdown_code(settings_line(result))]
    return escape.terminal("\n".join(out) + "\n")


def render_junit(result: GateResult) -> str:
    """JUnit XML: a test suite per script, a test case per function (and one for the script's run)."""
    result = escape.visible_values(result)
    suites = ET.Element("testsuites", name="guarddiag")
    by_script = {k: list(g) for k, g in groupby(sorted(result.rows, key=lambda r: r.script), key=lambda r: r.script)}
    scripts = sorted(set(by_script) | {f.script for f in result.findings})
    total_failures = 0
    for script in scripts:
        suite = ET.SubElement(suites, "testsuite", name=script)
        _properties(suite, result)
        cases = 0
        failures = 0
        crashed = [f for f in result.findings if f.script == script and f.kind == "script_failed"]
        run_case = ET.SubElement(suite, "testcase", classname=script, name="run")
        cases += 1
        for f in crashed:
            message = finding_message(f)
            ET.SubElement(run_case, "error", message=message, type="script_failed").text = message
        for row in by_script.get(script, []):
            label = function_label(row.function)
            case = ET.SubElement(suite, "testcase", classname=script, name=label, file=row.file, line=str(row.line or 0))
            cases += 1
            own = [f for f in result.failures if f.script == script and f.function == row.function]
            for f in own:
                ET.SubElement(case, "failure", message=finding_message(f), type=f.kind).text = "\n".join(_finding_lines(f))
            failures += bool(own)
        suite.set("tests", str(cases))
        suite.set("failures", str(failures))
        suite.set("errors", str(len(crashed)))
        total_failures += failures
    suites.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    suites.set("failures", str(total_failures))
    for element in suites.iter():
        element.attrib = {k: escape.xml(v) for k, v in element.attrib.items()}
        if element.text:
            element.text = escape.xml(element.text, lines=True)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + escape.xml_document(ET.tostring(suites, encoding="unicode")) + "\n"


def _properties(suite: ET.Element, result: GateResult) -> None:
    """The settings file in force and, when counts moved, the torch of the baseline and of the run."""
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="guarddiag.settings_file", value=result.settings_file or "none")
    if result.latency_margin is not None:
        margin = result.latency_margin
        ET.SubElement(properties, "property", name="guarddiag.guard_latency_margin", value=f"x{margin.factor:g}, +{margin.floor_us:g} us")
    if result.torch is not None:
        ET.SubElement(properties, "property", name="guarddiag.torch_baseline", value=result.torch.baseline or "not known")
        ET.SubElement(properties, "property", name="guarddiag.torch_now", value=result.torch.now or "not known")


def render_annotations(result: GateResult) -> str:
    """GitHub Actions workflow commands: an error on each regressed function's file and line, notices for
    improvements; the only lines guarddiag writes that the runner acts on, their values escaped (render.escape)."""
    result = escape.visible_values(result)
    lines = []
    for f in result.findings:
        if f.kind == "gone":
            continue
        level = "error" if f.failing else "notice"
        where = f"file={escape.workflow_property(f.file)}" + (f",line={f.line}" if f.line else "")
        body = "\n".join([finding_message(f), *finding_details(f)])
        title = escape.workflow_property("guarddiag " + f.kind)
        lines.append(f"::{level} {where},title={title}::{escape.workflow_message(body)}")
    return "\n".join(lines)
