"""Every untrusted string is escaped for the medium it goes to (render/escape.py).

Names, files, guard text and cause subjects come from torch logs and from run records, which are
other CI jobs' artifacts: hostile. The hostile runs here are built as an attacker would: a real
recorded log is parsed, its record saved, hostile strings written into the JSON, and the record read
back through the store; or a real log is parsed whose lines carry a hostile name (one line each).
Every renderer must then show the controls visibly, add no line, start no workflow command, keep its
Markdown code spans and tables whole, and JSON/YAML must keep the exact name.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from guarddiag import baseline
from guarddiag.config import Settings
from guarddiag.diff import diff_runs
from guarddiag.gate import evaluate
from guarddiag.model import Run
from guarddiag.pipeline import parse_logs
from guarddiag.render import render
from guarddiag.render.compare import render_compare
from guarddiag.render.diff import render_diffs
from guarddiag.render.escape import (
    html,
    markdown_code,
    markdown_text,
    one_line,
    terminal,
    visible,
    workflow_message,
    workflow_property,
    workflow_safe,
    xml,
)
from guarddiag.render.explain import render_explanation
from guarddiag.render.gate import render_annotations, render_check, render_junit, render_markdown
from guarddiag.report import record_dict, run_report, run_reports, save_report
from guarddiag.store import load_run
from tests.conftest import FIXTURES, LOGS
from tests.unit.render.test_formats import _compare_report
from tests.unit.reports import reports

# Rendering a whole run per example: fewer examples than the string-level properties.
RENDER = settings(max_examples=max(10, settings().max_examples // 5), deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

LIMIT = LOGS / "torch-2.13.0" / "recompile_limit.log"
FAILURES = LOGS / "torch-2.13.0" / "reset_and_failures.log"
BRANCH = LOGS / "torch-2.13.0" / "torchrun" / "branch4.log"
LOGDIR = LOGS / "torch-2.13.0" / "torchrun" / "logdir"
NAMES = LOGS / "torch-2.13.0" / "stack_slots.log"
HEADS = LOGS / "torch-2.13.0" / "module_dict_heads.log"
# Issue 25's causes: each size guard its own cause with a condition, a dict's keys, calls a stance refused.
SIZES = LOGS / "torch-2.13.0" / "size_guards.log"
KEYS = LOGS / "torch-2.13.0" / "dict_keys_order.log"
STANCES = FIXTURES / "stances" / "eager-2.13"
METRICS = FIXTURES / "torchmetrics" / "contexts-2.13"

# Control, format (bidi, zero-width), surrogate, line and paragraph separator characters: never raw.
_RAW = {"Cc", "Cf", "Cs", "Zl", "Zp"}
FRAGMENTS = [
    "\x1b]52;c;SGVsbG8=\x07",  # OSC 52: writes the clipboard
    "\x1b]0;owned\x07",  # OSC 0: the window title
    "\x1b]8;;https://e.example/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8: a hyperlink
    "\x1b[2J",  # CSI: clear the screen
    "\x9b2J",  # CSI as one C1 byte
    "\u202e", "\u2066", "\u061c", "\u200b", "\ufeff", "\u2028", "\x85",
    "\r", "\n", "\r\n", "\t", "\x00", "\x7f",
    "a\r\n::stop-commands::x", "\n::add-mask::secret", "\n  ::warning file=x.py::y", "::notice::n", "::",
    "##[error]boom", "##[", "#", "`", "``", "|", "<img src=x>", "[l](https://e)", "![i](https://e/p.png)",
    "*", "_", "\\", "&lt;", "$x$", "~~s~~", "%0A", ",", ":", " ",
    "https://e.example/x", "www.e.example", "a@e.example", "mailto:a", "<https://e>", "&#96;",
]
# The YAML a report writes read back by libyaml's parser where PyYAML has it (the same YAML 1.1 reading and
# SafeLoader's constructors: the same values): PyYAML's own parser took half of the tests that read reports.
_yaml_load = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
hostile_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.characters(codec="utf-8"), st.characters(max_codepoint=0x9F)),
    min_size=1,
    max_size=12,
).map("".join)


def _raw_controls(text: str, keep: str = "\n\t") -> list[str]:
    # Unicode's category of each distinct character: a report is thousands of characters, a few dozen kinds.
    raw = {c for c in set(text).difference(keep) if unicodedata.category(c) in _RAW}
    return [c for c in text if c in raw] if raw else []


def _assert_plain(text: str, benign: str | None = None) -> None:
    """A text output: no raw control but guarddiag's own newlines and tabs, no workflow command, and
    as many lines as the same report of a benign name."""
    assert not _raw_controls(text), _raw_controls(text)
    for line in text.split("\n"):
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line
    if benign is not None:
        assert text.count("\n") == benign.count("\n"), (text, benign)


_TABLE_LINE = re.compile(r"^\s*\|")
# What GFM turns into a link with no markup (extended autolinks): a URL, `www.`, an e-mail address.
_AUTOLINK = re.compile(r"://|(?i:www)\.|@|(?i:mailto|xmpp):")


def _assert_markdown(text: str, benign: str | None = None) -> None:
    """Markdown: plain as above; every code span closed on its line; outside them no raw `<` (but
    guarddiag's own <br>), `[` or backtick; a table keeps its header's column count."""
    _assert_plain(text, benign)
    columns = None
    for line in text.split("\n"):
        outside, i = [], 0
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] == "`":
                run = re.match("`+", line[i:]).group()
                close = re.compile(f"(?<!`){run}(?!`)").search(line, i + len(run))
                assert close is not None, f"unclosed code span in {line!r}"
                i = close.end()
                continue
            outside.append(line[i])
            i += 1
        prose = "".join(outside).replace("<br>", "")
        assert "<" not in prose and "[" not in prose and "]" not in prose, line
        assert not _AUTOLINK.search(prose), f"an autolink in {line!r}"
        if _TABLE_LINE.match(line):
            cells = len(re.findall(r"(?<!\\)\|", line))
            columns = cells if columns is None else columns
            assert cells == columns, line
        else:
            columns = None


def _record(run: Run, tmp_path: Path, name: str, poison) -> Run:
    """``run`` saved as a record, ``poison`` applied to its JSON, read back through the store."""
    data = json.loads(json.dumps(record_dict(run_report(run))))
    poison(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_run(path)


def _poison(value: str):
    """Put ``value`` into every string of a record an attacker controls without changing its shape."""

    def apply(data: dict) -> None:
        data["script"] = f"{value}.py"
        data["flags"], data["config"] = {value: value}, {value: 1}  # keys too: YAML must quote them
        data["log_path"] = f"/ci/{value}/torch.log"
        for f in data["functions"]:
            f["name"] = f"{f['name']}{value}" if f["name"] else f["name"]
            f["file"] = f"/src/{value}/{os.path.basename(f['file'])}" if f["file"] else f["file"]
            for e in f["recompile_events"]:
                for c in (*e["causes"], *e["also"]):
                    _poison_facts(c, value)
                    c["text"] = f"{value} == 1"
                    c["location"] = f"{value}.py:3 in {value}" if c["location"] else c["location"]
                    c["code"] = value if c["code"] else c["code"]
                    c["inner_location"] = f"{value}.py:5 in {value}" if c["inner_location"] else c["inner_location"]
                    c["inner_code"] = value if c["inner_code"] else c["inner_code"]
                    c["condition"] = f"{value} % 8 != 0" if c.get("condition") else c.get("condition", "")
            if f.get("resume"):
                f["resume"]["function"] = value
                for slot in f["resume"]["slots"]:
                    slot["expression"] = f"self.{value}(x)"
            for h in f["limit_hits"]:
                h["last_reason"] = value
                if h["cause"]:
                    _poison_facts(h["cause"], value)
            for c in f["failed_compiles"]:
                c["reason"] = f"Unsupported: {value}"
            for g in f["graph_breaks"]:
                g["reason"] = value
            for r in f.get("refusals", []):
                r["reasons"] = [f"0/{i}: {value}" for i, _ in enumerate(r["reasons"])]
                if r["cause"]:
                    _poison_facts(r["cause"], value)
                    r["cause"]["text"] = value
            # torch's own figures: its reason against the same entry, but another guard (a disagreement, shown).
            for m in f.get("torch_metrics", []):
                entry = (m["recompile_reason"] or "").partition(":")[0]
                m["recompile_reason"] = f"{entry}: {value} != 1\nUser stack trace:\n{value}" if entry else None
                m["user_contexts"] = [value, f"epoch {value}"] if m["user_contexts"] is not None else None
        if data.get("trace_path"):
            data["trace_path"] = f"/ci/{value}/trace"
        for p in data.get("job", {}).get("processes", []):
            p["host"] = value
            p["logs"] = [f"/ci/{value}/{os.path.basename(log)}" for log in p["logs"]]

    return apply


def _poison_facts(cause: dict, value: str) -> None:
    """A cause about ``value``: the object it guards, the property it checks, the objects it found aliased."""
    cause.update(guarded={"root": value, "role": "global", "path": f".{value}"}, checked=value, aliased=[value], known=True, reset=False)
    cause.pop("inferred", None)


def _benign(value: str) -> str:
    return "n" * len(value)


@functools.cache
def _real_runs() -> dict[str, Run]:
    """The real recorded runs the hostile records are made from (a failed script with a limit hit, failed
    compiles, ranks that diverge, a torchrun log dir's job)."""
    return {
        "limit": replace(parse_logs([str(LIMIT)]), source="run", status="failed", exit_code=1, torch_version="2.13.0"),
        "failures": parse_logs([str(FAILURES)]),
        "ranks": parse_logs([str(BRANCH)]),
        "job": parse_logs([str(LOGDIR)]),
        # resume functions with stack slots, and a cause in torch's own code (its user stack dropped)
        "names": parse_logs([str(NAMES)]),
        "sizes": parse_logs([str(SIZES)]),
        "keys": parse_logs([str(KEYS)]),
        "stances": _stance_run(),
        # torch's own figures per compile (a recompile context, a recompile_reason) and a kept TORCH_TRACE folder.
        "metrics": replace(_metrics_run(), log_path="/ci/torch.log", trace_path="/ci/trace"),
        "inner": replace(
            parse_logs([str(HEADS)]),
            functions=tuple(replace(f, recompile_events=tuple(
                replace(e, causes=tuple(replace(c, location="", code="", inner_location=c.location, inner_code=c.code) for c in e.causes))
                for e in f.recompile_events)) for f in parse_logs([str(HEADS)]).functions),
        ),
    }


def _metrics_run() -> Run:
    from guarddiag.runlogs import read_run_logs

    logs = read_run_logs(METRICS, METRICS / "torch.log", METRICS / "torch.compiles.jsonl")
    return Run(functions=logs.functions, parse=logs.stats, source="run", torch_version="2.13.0")


def _stance_run() -> Run:
    from guarddiag.runlogs import read_run_logs

    logs = read_run_logs(STANCES, STANCES / "torch.log", STANCES / "torch.compiles.jsonl")
    return Run(functions=logs.functions, parse=logs.stats, source="run", torch_version="2.13.0", stances=logs.stances)


def test_every_control_format_and_separator_character_is_shown_visibly():
    """The table of unsafe characters in render/escape.py against Unicode's own categories."""
    unsafe = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in _RAW]
    for ch in unsafe:
        shown = visible(ch)
        assert shown != ch and shown.isascii() and shown.isprintable(), (hex(ord(ch)), shown)
    assert visible("a\r\n\x1b]52;c;SGVsbG8=\x07\u202e") == "a\\r\\n\\x1b]52;c;SGVsbG8=\\x07\\u202e"
    assert terminal("own\tcells\nown lines\x1b[2J") == "own\tcells\nown lines\\x1b[2J"


@given(hostile_text)
def test_string_escapes_hold_for_any_text(value):
    assert not _raw_controls(visible(value), keep="")
    assert "\n" not in visible(value) and "##[" not in workflow_safe(visible(value))
    for out in (workflow_message(value), workflow_property(value)):
        assert not _raw_controls(out, keep="") and "##[" not in out and "\n" not in out and "\r" not in out
    assert not set(":,") & set(workflow_property(value))
    _assert_markdown(markdown_code(value))
    _assert_markdown(markdown_text(f"value of `{value}` in {value}"))
    cells = f"| {markdown_code(value, table=True)} | {markdown_text(value, table=True)} |"
    _assert_markdown(f"| a | b |\n|---|---|\n{cells}")
    element = ET.Element("case", name=xml(value))
    element.text = xml(value, lines=True)
    root = ET.fromstring(ET.tostring(element))  # valid XML 1.0
    assert not _raw_controls(root.get("name") or "", keep="") and not _raw_controls(root.text or "")
    assert "<" not in html(value) and '"' not in html(value)


@given(hostile_text)
@RENDER
def test_every_run_report_escapes_a_hostile_record(tmp_path_factory, value):
    tmp, real_runs = tmp_path_factory.mktemp("records"), _real_runs()
    for key, run in real_runs.items():
        hostile, benign = _record(run, tmp, key, _poison(value)), _record(run, tmp, key + "-b", _poison(_benign(value)))
        _assert_plain(render(run_report(hostile), "table"), render(run_report(benign), "table"))
        _assert_markdown(render(run_report(hostile), "markdown"), render(run_report(benign), "markdown"))
        for fmt, load in (("json", json.loads), ("yaml", _yaml_load)):
            text = render(run_report(hostile), fmt)
            _assert_plain(text)
            back = load(text)
            assert back["script"] == f"{value}.py" and back["flags"] == {value: value}
            assert [f["name"] for f in back["functions"]] == [f.name for f in hostile.functions]
            reasons = [m["recompile_reason"] for f in back["functions"] for m in f.get("torch_metrics", [])]
            assert reasons == [m.recompile_reason for f in hostile.functions for m in f.torch_metrics]
        if key == "metrics":  # torch's strings are shown: its reason disagrees, its contexts and the trace folder
            assert run_report(hostile).disagreements and "torch trace: /ci/" in render(run_report(hostile), "table")


@given(hostile_text)
@RENDER
def test_diff_and_compare_escape_a_hostile_record(tmp_path_factory, value):
    tmp, real_runs = tmp_path_factory.mktemp("records"), _real_runs()
    run = real_runs["limit"]
    hostile, benign = _record(run, tmp, "h", _poison(value)), _record(run, tmp, "b", _poison(_benign(value)))
    for fmt in ("table", "markdown", "json", "yaml"):
        text = render_diffs([diff_runs(run, hostile, "a.json", value)], fmt)
        _assert_plain(text)
        if fmt == "table":
            _assert_plain(text, render_diffs([diff_runs(run, benign, "a.json", _benign(value))], fmt))
        if fmt == "markdown":
            _assert_markdown(text, render_diffs([diff_runs(run, benign, "a.json", _benign(value))], fmt))
    report = _compare_report()
    poisoned = replace(report, diffs=tuple(diff_runs(run, hostile, "baseline", value) for _ in report.diffs))
    _assert_plain(render_compare(poisoned, "table"))
    _assert_markdown(render_compare(poisoned, "markdown"))
    assert json.loads(render_compare(poisoned, "json"))["diffs"][0]["after_label"] == value


@given(hostile_text)
@RENDER
def test_check_escapes_a_hostile_record_in_every_output(tmp_path_factory, value):
    tmp, real_runs = tmp_path_factory.mktemp("records"), _real_runs()
    for key in ("limit", "failures", "ranks", "stances", "sizes", "keys"):
        outputs = {}
        for name in (value, _benign(value)):
            run = _record(real_runs[key], tmp, key, _poison(name))
            config = Settings(root=tmp, max_recompiles=0, fail_on_limit_hit=True, fail_on_rank_divergence=True)
            outputs[name] = evaluate(run_reports({f"{name}.py": run}), None, config)
        result, benign = outputs[value], outputs[_benign(value)]
        _assert_plain(render_check(result, "table"), render_check(benign, "table"))
        _assert_markdown(render_markdown(result), render_markdown(benign))
        assert {f["script"] for f in json.loads(render_check(result, "json"))["findings"]} == {f"{value}.py"}
        annotations = render_annotations(result)
        assert annotations.count("\n") == render_annotations(benign).count("\n")
        for line in annotations.split("\n"):
            assert re.match(r"::(error|notice) file=[^:,]*(,line=\d+)?,title=guarddiag [a-z_]+::", line), line
            assert not _raw_controls(line, keep="") and "##[" not in line
        root = ET.fromstring(render_junit(result).encode())  # valid XML
        for element in root.iter():
            assert not any(_raw_controls(v, keep="") for v in element.attrib.values())
            assert not _raw_controls(element.text or "")


# What a log line can carry in a frame's name and still be read as that name: no line break, no space
# or colon (they end the name in torch's messages); `##[`, backticks, controls, bidi marks stay.
_IN_A_LOG_NAME = re.compile(r"[\s:\x0b\x0c\x1c-\x1e\x85\u2028\u2029'\"()]")


@given(hostile_text.map(lambda s: _IN_A_LOG_NAME.sub("", s) or "\x1b[2J"))
@RENDER
def test_a_log_line_naming_a_hostile_function_is_escaped_by_parse_and_explain(tmp_path_factory, value):
    """A log carries a name on one line: the frame's name in every line that names it."""
    tmp = tmp_path_factory.mktemp("logs")
    outputs = {}
    for name in (value, _benign(value)):
        log = tmp / f"{len(outputs)}.log"
        log.write_text(LIMIT.read_text(encoding="utf-8").replace("rollout", f"roll{name}"), encoding="utf-8", newline="")
        outputs[name] = parse_logs([str(log)]), log
    (hostile, log), (benign, benign_log) = outputs[value], outputs[_benign(value)]
    # How the parser reads an odd name is its own business (test_fuzz.py); here: how it is shown.
    assume([(f.compiles, f.recompiles) for f in hostile.functions] == [(f.compiles, f.recompiles) for f in benign.functions])
    assume(any(value in f.name for f in hostile.functions))
    _assert_plain(render(run_report(hostile), "table"), render(run_report(benign), "table"))
    _assert_markdown(render(run_report(hostile), "markdown"), render(run_report(benign), "markdown"))
    from guarddiag.commands.explain import explain_path

    (explanation, _), (benign_explanation, _) = explain_path(log, False), explain_path(benign_log, False)
    _assert_plain(render_explanation(explanation, "table"), render_explanation(benign_explanation, "table"))
    _assert_markdown(render_explanation(explanation, "markdown"), render_explanation(benign_explanation, "markdown"))
    assert value in json.loads(render_explanation(explanation, "json"))["functions"][0]["name"]


def test_markdown_code_spans_take_a_fence_longer_than_any_backtick_run():
    assert markdown_code("a`b") == "``a`b``"
    assert markdown_code("`x``") == "``` `x`` ```"
    assert markdown_code("a|b", table=True) == "`a\\|b`"
    assert markdown_text("value of `x` and <img src=x> [l](https://e)") == "value of `x` and &lt;img src=x> \\[l\\](https\\://e)"


def test_markdown_prose_makes_no_autolink(tmp_path):
    """GFM links a bare URL, `www.` and an e-mail address in prose: a label or a name outside a code
    span (check's regression lines, the step summary) must not become a link to the attacker's page."""
    assert markdown_text("see https://e.example/x") == "see https\\://e.example/x"
    assert markdown_text("www.e.example, a@e.example, mailto:a, `https://x`") == (
        "www\\.e.example, a\\@e.example, mailto\\:a, `https://x`"
    )
    value = "https://e.example/p www.e.example a@e.example"
    run = _record(_real_runs()["limit"], tmp_path, "limit", _poison(value))
    result = evaluate(run_reports({f"{value}.py": run}), None, Settings(root=tmp_path, max_recompiles=0))
    _assert_markdown(render_markdown(result))


@given(hostile_text)
@RENDER
def test_files_guarddiag_writes_start_no_workflow_command_and_keep_every_value(tmp_path_factory, value):
    """The run record (``--out``), the baseline and the JUnit XML are files, but ``--out /dev/stdout``
    writes one on stdout and a CI step may cat it: no ``##[``, no line starting ``::``, and every value
    reads back exactly (JUnit: as shown)."""
    tmp = tmp_path_factory.mktemp("files")
    value = f"{value}##[error]x\n::warning::y"
    run = _record(_real_runs()["limit"], tmp, "limit", _poison(value))
    save_report(run_report(run), tmp / "out.json")
    written = baseline.to_yaml(baseline.from_runs({f"{value}.py": run}, tmp))
    (tmp / "base.yaml").write_text(written, encoding="utf-8")
    result = evaluate(run_reports({f"{value}.py": run}), None, Settings(root=tmp, max_recompiles=0))
    junit = render_junit(result)
    for text in ((tmp / "out.json").read_text(encoding="utf-8"), written, junit):
        _assert_plain(text)
    assert load_run(tmp / "out.json") == run
    assert baseline.load(tmp / "base.yaml").scripts[0].path == f"{value}.py"
    assert {s.get("name") for s in ET.fromstring(junit.encode()).iter("testsuite")} == {visible(f"{value}.py")}


def test_commands_write_only_through_the_escaping_output():
    """Every command writes its text through commands/output.py (escaped for a terminal and a CI log),
    never with a bare typer.echo or print; clean prints only guarddiag's own folder path."""
    import ast

    from tests.conftest import ROOT

    sources = [*(ROOT / "guarddiag" / "commands").glob("*.py"), ROOT / "guarddiag" / "cli.py"]
    writes = []
    for path in sources:
        if path.name in ("output.py", "clean.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in ("print", "typer.echo", "sys.stdout.write", "sys.stderr.write") and "__version__" not in ast.unparse(node):
                    writes.append(f"{path.name}:{node.lineno}: {name}")
    assert not writes, writes


def test_every_stderr_line_of_guarddiag_itself_is_escaped():
    """Outside commands/ too (the runner, the run folders): a print to stderr passes its message through
    one_line, since a run folder's path holds the script's file name. The bootstrap and the start-up hooks
    run inside the script: what they print is the script's own stderr."""
    import ast

    from tests.conftest import ROOT

    package = ROOT / "guarddiag"
    raw = []
    for path in package.rglob("*.py"):
        if path.name == "_bootstrap.py" or "_site" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "print" and "stderr" in ast.unparse(node)):
                continue
            if not (node.args and isinstance(node.args[0], ast.Call) and ast.unparse(node.args[0].func) == "one_line"):
                raw.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not raw, raw


def _shell_words(command: str) -> list[bytes]:
    """The words bash reads from ``command`` (as a user pastes it)."""
    out = subprocess.run(["bash", "-c", 'eval "set -- $0"; printf "%s\\0" "$@"', command], capture_output=True, check=True)
    return out.stdout.split(b"\0")[:-1]


@given(hostile_text)
@settings(max_examples=max(15, settings().max_examples // 3), deadline=None)
def test_a_command_guarddiag_gives_is_the_same_text_in_every_output_and_runs_exactly_its_words(value):
    """A script path and arguments with quotes, `$()`, backticks, `;`, newlines, controls, bidi marks, `##[`: the
    command is left alone by every escape (what is shown is what is meant) and bash reads back exactly the words."""
    from guarddiag import shell

    assume("\x00" not in value)  # no path or argument holds a NUL
    words = ["guarddiag", "compare", f"{value}.py", "--flag", f"x={value}", "--", value, "$(touch pwned)", "`id`;"]
    command = shell.join(words)
    for shown in (visible(command), terminal(command), one_line(command), markdown_code(command)[1:-1]):
        assert shown == command
    assert _shell_words(command) == [os.fsencode(w) for w in words]


def test_a_command_naming_an_undecodable_file_names_its_bytes():
    from guarddiag import shell

    name = os.fsdecode(b"model\xff\x1b.py")
    assert shell.quote(name) == "$'model\\xff\\x1b.py'" and _shell_words(shell.join([name])) == [b"model\xff\x1b.py"]


def test_a_hint_command_for_a_hostile_script_runs_that_script_after_the_run_report_escapes_it(tmp_path):
    """The compare command under a cause group (run's advice), through the report's escaping, in every format."""
    from guarddiag.render.flips import advice_to_dict
    from guarddiag.verdicts import load_verdicts, run_advice

    hostile = "evil\n::error::$(touch pwned)`id`'; \u202e##[x.py"
    run = replace(parse_logs([str(LOGS / "torch-2.13.0" / "module_int_attribute.log")]), source="run", script=hostile,
                  torch_version="2.13.0", argv=("--name", "a b\x1b"))
    advice = run_advice(run, load_verdicts(run, tmp_path))
    json_advice = advice_to_dict(advice)
    command = json_advice["compare"]
    assert _shell_words(command) == [b"guarddiag", b"compare", os.fsencode(hostile), b"--", b"--name", b"a b\x1b"]
    assert "`" not in command  # a Markdown code span holds it whole
    assert command in render(run_report(run, advice), "table")  # shown as it is: pasted, it is that command
    assert f"`{command}`" in render(run_report(run, advice), "markdown")
    assert json.loads(render(run_report(run, advice), "json"))["advice"]["compare"] == command


def _hostile_verdicts(run: Run, value: str):
    """What a verdict file can say about every cause of ``run``: a hostile flip and value per cause, measured
    working (the run report lists it, with its line to apply), and a schema named by a file it does not use."""
    from guarddiag.compare import FlipOutcome
    from guarddiag.verdicts import Verdict, Verdicts, cause_keys, key_of

    outcome = FlipOutcome(value, value, "removes", value, 2, 0, 0, 0, 3, 1, 0.5, 0.1, 0, "ok", True,
                          run_recompiles_before=2, also=((value, value),))
    verdicts = tuple(Verdict(f.key, k, outcome, value) for f in run.functions for ks in cause_keys(f).values() for k in ks)
    return Verdicts(key_of(run), verdicts), Verdicts(key_of(run), (), "other_schema", value)


@given(hostile_text)
@RENDER
def test_every_run_report_with_its_advice_escapes_a_hostile_record_and_verdict_file(tmp_path_factory, value):
    """Run's advice: each cause group's hint (its subject, lines and the compare command naming the script), the
    flips a verdict file says compare measured (flag, value, the lines to apply them) and why a file is not used."""
    from guarddiag.verdicts import run_advice

    tmp, real_runs = tmp_path_factory.mktemp("records"), _real_runs()
    for key in ("limit", "names", "sizes", "keys", "stances"):
        hostile, benign = (_record(real_runs[key], tmp, key + n, _poison(v)) for n, v in (("", value), ("-b", _benign(value))))
        hostile, benign = (replace(r, source="run", torch_version="2.13.0") for r in (hostile, benign))
        for (found, ignored), (found_b, ignored_b) in [(_hostile_verdicts(hostile, value), _hostile_verdicts(benign, _benign(value)))]:
            for verdicts, benign_verdicts in ((found, found_b), (ignored, ignored_b)):
                advice, benign_advice = run_advice(hostile, verdicts), run_advice(benign, benign_verdicts)
                _assert_plain(render(run_report(hostile, advice), "table"), render(run_report(benign, benign_advice), "table"))
                _assert_markdown(render(run_report(hostile, advice), "markdown"), render(run_report(benign, benign_advice), "markdown"))
                for fmt, load in (("json", json.loads), ("yaml", _yaml_load)):
                    text = render(run_report(hostile, advice), fmt)
                    _assert_plain(text)
                    back = load(text)["advice"]
                    assert back["compare"] == advice.command
                    if verdicts is found and back["functions"]:
                        assert value in {o["flag"] for f in back["functions"] for c in f["causes"] for o in c["found"]}


@given(hostile_text)
@RENDER
def test_compare_without_flag_escapes_a_hostile_baseline_in_every_format(tmp_path_factory, value):
    """compare's causes and flips: the cause titles, each flip's outcome, value and line to apply, what was not run."""
    from guarddiag.compare import ComparePlan, Variant, VariantResult, build_report
    from guarddiag.flags import catalog_from_dict
    from guarddiag.flips import plan_flips

    catalog = catalog_from_dict(json.loads((FIXTURES / "flags" / "torch-2.13.0.json").read_text()))
    tmp, real_runs = tmp_path_factory.mktemp("records"), _real_runs()
    for key in ("limit", "sizes", "keys"):
        compared = []
        for name in (value, _benign(value)):
            run = replace(_record(real_runs[key], tmp, key, _poison(name)), source="run", torch_version="2.13.0")
            flips = plan_flips(catalog, run, 3)
            plan = ComparePlan(Variant("baseline", "py"), tuple(Variant(f"{f}={v}", "py", ((f, v),)) for f, v in flips.flips)
                               + (Variant(name, "py", ((name, name), (name, "1"))),))
            results = [VariantResult(v, reports(run)) for v in (plan.baseline, *plan.variants)]
            compared.append(build_report(plan, results, catalog, flips))
        hostile, benign = compared
        _assert_plain(render_compare(hostile, "table"), render_compare(benign, "table"))
        _assert_markdown(render_compare(hostile, "markdown"), render_compare(benign, "markdown"))
        for fmt in ("json", "yaml"):
            _assert_plain(render_compare(hostile, fmt))


_IN_A_KEY = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029']")


@given(hostile_text.map(lambda s: _IN_A_KEY.sub("", s) or "\x1b[2J"))
@RENDER
def test_a_log_naming_a_hostile_tensor_is_escaped_in_explains_hints_and_runs_advice(tmp_path_factory, value):
    """A log names a tensor (a dict key, a crafted log) by any string on one line: explain's guards, conditions and
    hints (their lines to write or why none is given) and run's advice built from the same log stay escaped."""
    from guarddiag.commands.explain import explain_path
    from guarddiag.explain import listings_of
    from guarddiag.verdicts import NO_VERDICTS, run_advice

    tmp = tmp_path_factory.mktemp("logs")
    for source, name in ((LOGS / "torch-2.13.0" / "ragged_dataloader.log", "'xb'"), (SIZES, "'x'")):
        log = tmp / source.name
        log.write_text(source.read_text(encoding="utf-8").replace(name, f"'{value}'"), encoding="utf-8", newline="")
        explanation, _ = explain_path(log, False)
        _assert_plain(render_explanation(explanation, "table"))
        _assert_markdown(render_explanation(explanation, "markdown"))
        for fmt in ("json", "yaml"):
            _assert_plain(render_explanation(explanation, fmt))
        run = replace(parse_logs([str(log)]), source="run", torch_version="2.13.0", script=f"{value}.py")
        with log.open(encoding="utf-8") as fh:
            advice = run_advice(run, NO_VERDICTS, listings_of(fh).by_frame)
        _assert_plain(render(run_report(run, advice), "table"))
        _assert_markdown(render(run_report(run, advice), "markdown"))


def test_a_lambda_in_the_markdown_divergence_section_is_not_taken_for_an_html_tag():
    from guarddiag.render.escape import markdown_text

    line = "<lambda> (x.py:3): rank 1 recompiled it (value of `a<b`)"
    assert markdown_text(line) == "&lt;lambda> (x.py:3): rank 1 recompiled it (value of `a<b`)"
