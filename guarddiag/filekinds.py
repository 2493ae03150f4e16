"""Which of guarddiag's own files a path holds, told by its content, so that a file given to the wrong
command is named with the command that reads it (a check report given to diff was "upgrade guarddiag",
a run record given to parse "capture the log with TORCH_LOGS").

Every JSON and YAML file guarddiag writes carries ``schema: guarddiag.KIND/N``; its JUnit XML is a
``<testsuites name="guarddiag">`` and its step summary begins ``## guarddiag check``. A TORCH_TRACE file
(torch's structured trace, tlparse's input) is named too: ``parse`` and ``explain`` read it with its own
reader (its glog-prefixed lines are JSON records, which the log parser would read as a log that compiled nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Enough of the head to pass a script's own output before a `run -f json > FILE` report.
_HEAD = 64 * 1024
_JSON_SCHEMA = re.compile(r'^[ \t]*\{?[ \t]*"schema"[ \t]*:[ \t]*"(guarddiag\.[a-z-]+)/[0-9]+"', re.MULTILINE)
# A TORCH_TRACE record: a glog prefix, then a JSON object (`{"dynamo_start": ...}`, `{"chromium_event": ...}`).
_TRACE_RECORD = re.compile(r'^[VIWEF][0-9]{4} [0-9:.]+ +[0-9]+ [^\]\n]*\] \{"')
_YAML_SCHEMA = re.compile(r"^schema:[ \t]*['\"]?(guarddiag\.[a-z-]+)/[0-9]+", re.MULTILINE)


@dataclass(frozen=True)
class FileKind:
    """One kind of file guarddiag writes: what it is, what writes it, what reads it ("" when no command does)."""

    noun: str
    made_by: str
    read_by: str = ""


RUN_RECORD = "guarddiag.run"
_BY_SCHEMA = {
    RUN_RECORD: FileKind("a guarddiag run record", "guarddiag run --out, parse --out or merge -o",
                         "guarddiag diff, explain, merge, check and baseline read it"),
    "guarddiag.baseline": FileKind("a guarddiag baseline", "guarddiag baseline", "guarddiag check reads it (--baseline FILE)"),
    "guarddiag.check": FileKind("a guarddiag check report", "guarddiag check -f json or yaml"),
    "guarddiag.compare": FileKind("a guarddiag compare report", "guarddiag compare -f json or yaml"),
    "guarddiag.diff": FileKind("a guarddiag diff report", "guarddiag diff -f json or yaml"),
    "guarddiag.explain": FileKind("a guarddiag explain report", "guarddiag explain -f json or yaml"),
    "guarddiag.flag-list": FileKind("a guarddiag flag list", "guarddiag flags -f json or yaml"),
    "guarddiag.flags": FileKind("guarddiag's cache of torch's flags", "guarddiag flags, under .guarddiag/cache"),
    "guarddiag.verdicts": FileKind("guarddiag's record of what compare measured", "guarddiag compare, under .guarddiag/verdicts",
                                   "guarddiag run and explain read it to say which fix hints were verified"),
}
_RUN_REPORT_YAML = FileKind("a guarddiag run report in YAML", "guarddiag run -f yaml",
                            "write the record with `guarddiag run SCRIPT --out FILE` instead")
_RUN_REPORT_MIXED = FileKind("a guarddiag run report with the script's own output before it", "guarddiag run -f json > FILE",
                             "write the record with `guarddiag run SCRIPT --out FILE` instead")
TORCH_TRACE = FileKind("a TORCH_TRACE structured trace", "written by TORCH_TRACE=DIR, read by tlparse",
                        "guarddiag parse and explain read it")
_JUNIT = FileKind("a guarddiag JUnit report", "guarddiag check --junit", "CI test reporters read it")
_SUMMARY = FileKind("a guarddiag step summary", "guarddiag check -f markdown or $GITHUB_STEP_SUMMARY")

# What each command expects, and who reads it: the second half of the message.
_WANTED = {
    "record": ("a run record", "diff, explain, merge, check and baseline read run records written by guarddiag run --out"),
    "log": ("a torch log", "parse and explain read torch logs (captured with TORCH_LOGS=dynamo,guards,recompiles,graph_breaks)"),
    "baseline": ("a baseline", "check --baseline reads the YAML that guarddiag baseline writes"),
    "script": ("a Python script", "check and baseline run scripts (.py) and read run records (.json)"),
}


def is_trace_text(head: str) -> bool:
    """Whether text that begins so is a TORCH_TRACE (a glog prefix, then a JSON record)."""
    return bool(_TRACE_RECORD.match(head.lstrip("\ufeff").lstrip()))


def file_kind(path: Path, leading: bool = False) -> FileKind | None:
    """The kind of guarddiag file ``path`` holds, None when it is none of them (or cannot be read).
    ``leading``: only a file that begins as guarddiag's do (a log that quotes a report further down is a log)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD).decode("utf-8", errors="replace").lstrip("\ufeff")
    except OSError:
        return None
    if is_trace_text(head):
        return TORCH_TRACE
    if re.search(r'<testsuites name="guarddiag"', head[:4096]):
        return _JUNIT
    if head.lstrip().startswith("## guarddiag check"):
        return _SUMMARY
    json_schema, yaml_schema = _JSON_SCHEMA.search(head), _YAML_SCHEMA.search(head)
    if json_schema and not (yaml_schema and yaml_schema.start() < json_schema.start()):
        before = head[: json_schema.start()].rstrip().removesuffix("{").strip()
        if before and leading:
            return None
        if json_schema[1] == RUN_RECORD and before:
            return _RUN_REPORT_MIXED
        return _BY_SCHEMA.get(json_schema[1], FileKind(f"a guarddiag file ({json_schema[1]})", "another guarddiag version"))
    if yaml_schema:
        before = [ln for ln in head[: yaml_schema.start()].splitlines() if ln.strip() and not ln.startswith("#")]
        if before and leading:
            return None
        if yaml_schema[1] == RUN_RECORD:
            return _RUN_REPORT_YAML
        return _BY_SCHEMA.get(yaml_schema[1], FileKind(f"a guarddiag file ({yaml_schema[1]})", "another guarddiag version"))
    return None


def is_run_record(path: Path) -> bool:
    """Whether ``path`` holds a run record (JSON, schema ``guarddiag.run``), whatever its name."""
    return file_kind(path) is _BY_SCHEMA[RUN_RECORD]


def wrong_file(path: Path | str, wanted: str, leading: bool = False) -> str | None:
    """The one-line error for one of guarddiag's own files given where ``wanted`` (record, log, baseline,
    script) is expected: what the file is and which command reads it. None when it is none of guarddiag's
    files, or the kind wanted (its own reader says what else is wrong). ``leading``: as for :func:`file_kind`."""
    kind = file_kind(Path(path), leading)
    if kind is None or (wanted == "record" and kind is _BY_SCHEMA[RUN_RECORD]) or (wanted == "log" and kind is TORCH_TRACE):
        return None
    if wanted == "baseline" and kind is _BY_SCHEMA["guarddiag.baseline"]:
        return None
    noun, readers = _WANTED[wanted]
    read_by = f"; {kind.read_by}" if kind.read_by else ""
    return f"{path}: {kind.noun} ({kind.made_by}), not {noun}; {readers}{read_by}"
