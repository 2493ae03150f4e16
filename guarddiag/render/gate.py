"""Renderers for ``check``: terminal table, Markdown (step summary), JSON/YAML, JUnit XML, GitHub annotations.

JSON/YAML schema versions (``schema`` key):
  guarddiag.check/1 -- first version: ``exit_code``, ``verdict``, ``rows[]`` (one per checked
  function) and ``findings[]`` (facts, plus the ``message`` and ``details`` the table shows).
  Added since, optional for readers: ``settings_file`` (the settings file in force, null: none found)
  and ``torch`` (``{baseline, now}``, null unless a count moved against a baseline of another or an
  unknown torch; each null when not known); per row ``refused_calls`` and ``refused_calls_baseline``
  (calls a compiler stance refused to recompile), and the finding kind ``refused``.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from itertools import groupby

from tabulate import tabulate

from guarddiag.divergence import divergence_to_dict
from guarddiag.gate import Finding, GateResult, TorchChange
from guarddiag.render import escape
from guarddiag.render.divergence import divergence_label, divergence_sentence
from guarddiag.render.formats import render_as
from guarddiag.render.job import logs_at
from guarddiag.render.summary import cause_group_line, cause_groups, refusal_group_line, refusal_groups
from guarddiag.render.words import (
    capture_gap,
    function_label,
    limit_sentence,
    place_label,
    script_outcome,
    uncounted_stance_sentence,
    unobserved_sentence,
)
from guarddiag.report import RunReport

CHECK_SCHEMA = "guarddiag.check/1"
_HEADERS = ["script", "function", "baseline", "now", "allowed", "limit hits", "status"]


def _headers(result: GateResult) -> list[str]:
    """The table's columns; ``refused`` only where a function's calls were refused (now or in the baseline)."""
    return _HEADERS[:-1] + (["refused"] if _any_refused(result) else []) + _HEADERS[-1:]


def _any_refused(result: GateResult) -> bool:
    return any(r.refused or r.refused_before for r in result.rows)


def _rows(result: GateResult) -> list[list[object]]:
    refused = _any_refused(result)
    return [
        [
            r.script,
            function_label(r.function),
            "-" if r.before is None else r.before,
            r.after,
            "-" if r.allowed is None else r.allowed,
            _limit_cell(r.limit_hits_before, r.limit_hits),
            *([_limit_cell(r.refused_before, r.refused)] if refused else []),
            r.status,
        ]
        for r in result.rows
    ]


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
        regressions = len(result.failures) - diverging
        parts = [f"{regressions} recompile regression(s)"] * bool(regressions) + [f"{diverging} rank divergence(s)"] * bool(diverging)
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
    if f.function is None:
        if f.kind == "gone" and f.name:
            return f"{place_label(f.name, f.file, f.line)}: in the baseline, not compiled in this run"
        return f"{f.script}: not in the baseline; `--update` adds it"
    label, recompiles = function_label(f.function), f.function.recompiles
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
                "status": r.status,
            }
            for r in result.rows
        ],
        "findings": [_finding_to_dict(f) for f in result.findings],
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
