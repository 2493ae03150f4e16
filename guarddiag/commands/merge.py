"""``guarddiag merge``: the records of several nodes of one job, or of several jobs, as one report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from guarddiag.commands.options import check_format
from guarddiag.commands.run import finish
from guarddiag.errors import InputError
from guarddiag.filekinds import RUN_RECORD
from guarddiag.ids import RECORD_LABEL

_LABELLED = re.compile(rf"({RECORD_LABEL})=(.+)")


def merge_command(items: list[str], jobs: bool, fmt: str, out: Path | None) -> None:
    """Load ``[LABEL=]RECORD`` items, merge them (nodes of one job, or ``jobs``), print and save the report."""
    from guarddiag.merge import RankClash, merge_runs
    from guarddiag.report import run_report
    from guarddiag.store import load_run

    check_format(fmt)
    labelled = [_label(item) for item in items]
    if len(labelled) < 2:
        raise InputError("merge: give two or more run records (`guarddiag parse --out` or `guarddiag run --out` on each node)")
    seen: dict[str, str] = {}
    for label, path in labelled:
        if label in seen:
            raise InputError(f"{path}: its label {label!r} is also {seen[label]}'s; name them apart as LABEL=PATH (e.g. node1={path})")
        seen[label] = path
    _same_schema(labelled)
    records = [(label, path, load_run(Path(path))) for label, path in labelled]
    try:
        run = merge_runs(records, jobs)
    except RankClash as clash:
        rank, first, second = clash.args
        raise InputError(
            f"{second}: {rank} is also in {first}; the nodes of one job have distinct global ranks: "
            "if these records come from different jobs (a CI matrix), merge them with --jobs"
        ) from None
    finish(run_report(run), fmt, out, False)


def _label(item: str) -> tuple[str, str]:
    """``node1=a.json`` -> (node1, a.json); ``runs/a.json`` -> (a, runs/a.json) (the stem, made a label)."""
    m = _LABELLED.fullmatch(item)
    if m is not None and not Path(item).exists():
        return m[1], m[2]
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", Path(item).stem) or "record", item


def _same_schema(labelled: list[tuple[str, str]]) -> None:
    """Refuse records of different schema versions in one line, before reading any of them whole."""
    schemas: dict[str, str] = {}
    for _, path in labelled:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            continue  # load_run says what is wrong with it
        # Another of guarddiag's files (a check report) is no record of another version: load_run names it.
        if isinstance(data, dict) and isinstance(data.get("schema"), str) and data["schema"].startswith(RUN_RECORD + "/"):
            schemas.setdefault(data["schema"], path)
    if len(schemas) > 1:
        shown = ", ".join(f"{path} is {schema}" for schema, path in schemas.items())
        raise InputError(f"merge: records of different schema versions ({shown}); re-create them with one guarddiag version")
