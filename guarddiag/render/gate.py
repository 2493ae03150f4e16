"""Renderers for ``check``: terminal table, Markdown (step summary), JUnit XML, GitHub annotations."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby

from tabulate import tabulate

from guarddiag.gate import Finding, GateResult

_HEADERS = ["script", "function", "baseline", "now", "allowed", "limit hits", "status"]


def _rows(result: GateResult) -> list[list[object]]:
    return [
        [
            r.script,
            r.function,
            "-" if r.before is None else r.before,
            r.after,
            "-" if r.allowed is None else r.allowed,
            _limit_cell(r.limit_hits_before, r.limit_hits),
            r.status,
        ]
        for r in result.rows
    ]


def _limit_cell(before: int | None, now: int) -> str:
    """Limit hits, baseline -> now, where there are any."""
    if not now and not before:
        return ""
    return f"{'-' if before is None else before} -> {now}"


def _verdict(result: GateResult) -> str:
    failed = [f for f in result.findings if f.kind == "script_failed"]
    if failed:
        return f"FAILED: {len(failed)} script(s) did not run to the end; fix them first"
    if result.failures:
        return f"FAILED: {len(result.failures)} recompile regression(s)"
    note = f"; {len(result.improvements)} improvement(s), record with `guarddiag check --update`" if result.improvements else ""
    return f"OK: no recompile regression{note}"


def _finding_lines(f: Finding) -> list[str]:
    return [f"{f.kind}: {f.message}", *(f"    {d}" for d in f.details)]


def render_text(result: GateResult) -> str:
    """The terminal report: a table of every checked function, then what failed and what improved."""
    out = [tabulate(_rows(result), headers=_HEADERS)] if result.rows else ["no compiled functions"]
    for f in result.findings:
        if f.kind != "gone":
            out += [""] + _finding_lines(f)
    gone = [f for f in result.findings if f.kind == "gone"]
    if gone:
        out += ["", *(f"note: {f.message}" for f in gone)]
    return "\n".join([*out, "", _verdict(result)])


def render_markdown(result: GateResult) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: a table and the findings."""
    out = ["## guarddiag check", "", f"**{_verdict(result)}**", ""]
    if result.rows:
        out.append(tabulate(_rows(result), headers=_HEADERS, tablefmt="github"))
    for f in result.findings:
        out += ["", f"- **{f.kind}** {f.message}", *(f"  - {d}" for d in f.details)]
    return "\n".join(out) + "\n"


# Characters XML 1.0 cannot hold even escaped (C0 controls but tab, LF and CR; surrogates; U+FFFE/FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """``text`` with what XML cannot hold written as ``\\xNN`` (a function name with control characters)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def render_junit(result: GateResult) -> str:
    """JUnit XML: a test suite per script, a test case per function (and one for the script's run)."""
    suites = ET.Element("testsuites", name="guarddiag")
    by_script = {k: list(g) for k, g in groupby(sorted(result.rows, key=lambda r: r.script), key=lambda r: r.script)}
    scripts = sorted(set(by_script) | {f.script for f in result.findings})
    total_failures = 0
    for script in scripts:
        suite = ET.SubElement(suites, "testsuite", name=script)
        cases = 0
        failures = 0
        crashed = [f for f in result.findings if f.script == script and f.kind == "script_failed"]
        run_case = ET.SubElement(suite, "testcase", classname=script, name="run")
        cases += 1
        for f in crashed:
            ET.SubElement(run_case, "error", message=f.message, type="script_failed").text = f.message
        for row in by_script.get(script, []):
            case = ET.SubElement(suite, "testcase", classname=script, name=row.function, file=row.file, line=str(row.line or 0))
            cases += 1
            own = [f for f in result.failures if f.script == script and f.function == row.function]
            for f in own:
                ET.SubElement(case, "failure", message=f.message, type=f.kind).text = "\n".join(_finding_lines(f))
            failures += bool(own)
        suite.set("tests", str(cases))
        suite.set("failures", str(failures))
        suite.set("errors", str(len(crashed)))
        total_failures += failures
    suites.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    suites.set("failures", str(total_failures))
    for element in suites.iter():
        element.attrib = {k: _xml(v) for k, v in element.attrib.items()}
        if element.text:
            element.text = _xml(element.text)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _escape(text: str) -> str:
    # GitHub workflow commands: %, CR and LF must be escaped in messages; also , and : in properties.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_annotations(result: GateResult) -> str:
    """GitHub Actions workflow commands: an error on each regressed function's file and line, notices for improvements."""
    lines = []
    for f in result.findings:
        if f.kind == "gone":
            continue
        level = "error" if f.failing else "notice"
        where = f"file={_prop(f.file)}" + (f",line={f.line}" if f.line else "")
        body = "\n".join([f.message, *f.details])
        lines.append(f"::{level} {where},title={_prop('guarddiag ' + f.kind)}::{_escape(body)}")
    return "\n".join(lines)
