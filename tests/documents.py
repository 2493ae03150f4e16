"""What every output format must be, whatever the command: one parseable document."""

from __future__ import annotations

import json
import re

import yaml

_HEADING = re.compile(r"^(#{1,6}) ")


def assert_document(text: str, fmt: str, schema: str | None = None) -> object:
    """Check ``text`` is one document of ``fmt``; return the parsed data (json/yaml) or the text.

    JSON and YAML must parse to a mapping (with ``schema`` when given). Markdown must open with its
    one top heading (``##``, as GitHub step summaries nest them) and hold no second one: every other
    heading is deeper. A table is a plain report, never a JSON or Markdown document.
    """
    assert text.strip(), f"empty {fmt} output"
    if fmt in ("json", "yaml"):
        data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
        assert isinstance(data, dict), f"{fmt} output is not a mapping: {type(data).__name__}"
        if schema is not None:
            assert data.get("schema") == schema, data.get("schema")
        return data
    if fmt == "markdown":
        lines = text.splitlines()
        assert _HEADING.match(lines[0]) and lines[0].startswith("## "), f"markdown must open with its heading: {lines[0]!r}"
        fenced = False
        for line in lines[1:]:
            fenced ^= line.startswith("```")
            match = None if fenced else _HEADING.match(line)
            assert match is None or len(match.group(1)) > 2, f"a second top heading in one markdown document: {line!r}"
        _assert_tables(lines)
        return text
    assert fmt == "table", fmt
    assert not text.lstrip().startswith(("{", "#")), "a table report is plain text"
    return text


def _assert_tables(lines: list[str]) -> None:
    """Each GitHub table: a header row, a separator row, and rows of as many cells."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    for block in (b for b in blocks if b):
        cells = [len(re.split(r"(?<!\\)\|", row)) for row in block]
        assert len(block) >= 2 and set(block[1]) <= set("|-: "), f"a table without its separator row: {block[:2]}"
        assert len(set(cells)) == 1, f"rows of different widths in one table: {block}"
