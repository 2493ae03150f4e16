"""docs/commands.md names every command and option of the installed CLI, read from its `--help`; the
links of the README and docs/ lead somewhere."""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.conftest import ROOT, run_guarddiag

REFERENCE = ROOT / "docs" / "commands.md"
# A command's section: `## `guarddiag NAME`` up to the next `## ` heading.
_SECTION = re.compile(r"^## `guarddiag (?P<name>[a-z-]+)`\n(?P<body>.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


@cache
def _help(*command: str) -> str:
    proc = run_guarddiag(*command, "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _block(help_text: str, title: str) -> list[str]:
    """The lines of one `Title:` block of click's help, up to the next blank line."""
    lines = help_text.splitlines()
    start = lines.index(f"{title}:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def options(help_text: str) -> set[str]:
    """Every option spelling (`-j`, `--jobs`, `--no-fail-on-limit-hit`) of a command's help."""
    found = set()
    for line in _block(help_text, "Options"):
        if line.startswith("  -"):
            declaration = re.split(r"\s{2,}", line.strip())[0]  # the description follows two spaces or more
            found |= set(_OPTION.findall(declaration))
    return found


def commands(help_text: str) -> list[str]:
    """The commands `guarddiag --help` lists."""
    return [line.split()[0] for line in _block(help_text, "Commands")]


def sections() -> dict[str, str]:
    """docs/commands.md's section of each command; the text before the first one under `""`."""
    text = REFERENCE.read_text(encoding="utf-8")
    found = {m["name"]: m["body"] for m in _SECTION.finditer(text)}
    found[""] = text[: _SECTION.search(text).start()]
    return found


def _named(option: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_the_help_is_read_whole():
    """The reader of `--help` finds what is there, so that the checks below cannot pass on nothing."""
    assert {"run", "parse", "compare", "check", "explain", "version"} <= set(commands(_help()))
    assert {"-b", "--baseline", "--fail-on-limit-hit", "--no-fail-on-limit-hit", "--max-refused-calls", "-m", "--module", "-h"} <= options(
        _help("check")
    )
    assert "--module-arg" not in options(_help("run")), "a hidden option is no user's"


def test_every_command_has_a_section():
    assert sorted(commands(_help())) == sorted(name for name in sections() if name)


@pytest.mark.parametrize("command", sorted(name for name in sections() if name))
def test_every_option_of_a_command_is_named_in_its_section(command):
    section = sections()[command]
    missing = sorted(o for o in options(_help(command)) - {"-h", "--help"} if not _named(o, section))
    assert not missing, f"docs/commands.md, section `guarddiag {command}`, does not name {missing}"


def test_the_options_of_every_command_are_named_before_the_sections():
    """`guarddiag --help`'s own options, and -h/--help, which every command takes."""
    missing = sorted(o for o in options(_help()) | {"-h", "--help", "--debug"} if not _named(o, sections()[""]))
    assert not missing, f"docs/commands.md does not name {missing} before the commands' sections"


# [text](target): a relative link of a Markdown page, with its #anchor if any.
_LINK = re.compile(r"\[[^\]]*\]\((?!https?://|mailto:)(?P<path>[^)#\s]*)(?:#(?P<anchor>[^)\s]+))?\)")


def _unfenced(text: str) -> str:
    """A page without its fenced blocks, where nothing is a heading."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _prose(text: str) -> str:
    """A page without its fenced blocks and code spans, where nothing is a link."""
    return re.sub(r"`[^`\n]*`", "", _unfenced(text))


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#+ (.+)$", _unfenced(text), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_link_of_the_readme_and_docs_leads_somewhere(page):
    broken = []
    for m in _LINK.finditer(_prose(page.read_text(encoding="utf-8"))):
        target = (page.parent / m["path"]).resolve() if m["path"] else page
        anchors = _anchors(target.read_text(encoding="utf-8")) if target.suffix == ".md" and target.exists() else set()
        if not target.exists() or (m["anchor"] and target.suffix == ".md" and m["anchor"] not in anchors):
            broken.append(m[0])
    assert not broken, f"{page.relative_to(ROOT)}: links that lead nowhere: {broken}"
