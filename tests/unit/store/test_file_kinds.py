"""One function knows guarddiag's file kinds by content: every schema guarddiag writes is one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from guarddiag.filekinds import file_kind, wrong_file
from tests.conftest import LOGS, ROOT

# Every schema literal in guarddiag's sources ("guarddiag.check/1", ...): a new kind of file must be named too.
_SCHEMAS = sorted({m for p in (ROOT / "guarddiag").rglob("*.py") for m in re.findall(r'"(guarddiag\.[a-z-]+/[0-9]+)"', p.read_text())})


def test_the_sources_write_the_schemas_this_test_expects():
    assert {"guarddiag.run/1", "guarddiag.check/1", "guarddiag.baseline/1", "guarddiag.compare/1"} <= set(_SCHEMAS)


@pytest.mark.parametrize("schema", _SCHEMAS)
@pytest.mark.parametrize("shape", ["json", "yaml"])
def test_every_schema_guarddiag_writes_is_a_known_kind(tmp_path: Path, schema: str, shape: str):
    path = tmp_path / "file"
    doc = {"schema": schema, "rows": []}
    path.write_text(json.dumps(doc, indent=2) if shape == "json" else f"# a header\nschema: {schema}\nrows: []\n")
    kind = file_kind(path)
    assert kind is not None and "another guarddiag version" not in kind.made_by, (schema, kind)


def test_a_log_that_quotes_a_report_further_down_is_a_log(tmp_path: Path):
    log = tmp_path / "ci.log"
    log.write_text((LOGS / "torch-2.13.0" / "module_int_attribute.log").read_text() + '{\n  "schema": "guarddiag.check/1"\n}\n')
    assert wrong_file(log, "log", leading=True) is None
    assert file_kind(tmp_path / "missing") is None


def test_a_newer_record_is_not_named_as_another_file(tmp_path: Path):
    """A record of another version is still a record: its reader says to upgrade guarddiag."""
    path = tmp_path / "r.json"
    path.write_text('{"schema": "guarddiag.run/9"}')
    assert wrong_file(path, "record") is None
