"""The repository does not know the machine it was written on.

Recorded fixtures (text logs and TORCH_TRACE folders) name only the neutral roots that
tests/fixtures/record_logs.py writes, and no tracked
file names this checkout's own directory (a path that means nothing in a contributor's clone, a user's
CI or a package).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, NEUTRAL_PROJECT, ROOT
from tests.fixtures.record_logs import NEUTRAL_BASE, NEUTRAL_LOGS, NEUTRAL_VENV, neutralize

# An absolute POSIX path: a slash that does not continue a word, a URL ("https://") or a relative path.
ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:[\w.+-]+/)+[\w.+-]*")
NEUTRAL = (NEUTRAL_PROJECT, NEUTRAL_VENV, NEUTRAL_BASE, NEUTRAL_LOGS)
RECORDED = sorted(
    [*(p for pattern in ("logs/torch-*/**/*", "flips/torch-*/**/*", "traces/torch-*/**/*") for p in FIXTURES.glob(pattern) if p.is_file()),
     *FIXTURES.glob("flags/*.json")]
)


# JSON's escapes (a trace's payloads and metadata, truth files): a path right after "\n" is a path all the same.
JSON_ESCAPE = re.compile(r'\\[nrt"]')


def _machine_paths(text: str) -> list[str]:
    text = JSON_ESCAPE.sub(" ", text)
    return sorted({m.group() for m in ABSOLUTE.finditer(text)
                   if not any(m.group() == root or m.group().startswith(root + "/") for root in NEUTRAL)})


def test_there_are_recorded_fixtures_to_check():
    assert len(RECORDED) > 100


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_recorded_fixtures_name_only_the_neutral_roots(path: Path):
    found = _machine_paths(path.read_text(encoding="utf-8", errors="replace"))
    assert not found, f"{path.name} names paths of the recording machine; re-record, or rewrite them: {found[:5]}"


def test_the_check_finds_a_machine_path():
    line = 'File "/srv/ci/checkout/scenarios/x.py", line 3; see https://pytorch.org/docs/a/b and torch/_dynamo/x.py'
    assert _machine_paths(line) == ["/srv/ci/checkout/scenarios/x.py"]
    assert _machine_paths(f'File "{NEUTRAL_PROJECT}/scenarios/x.py" in {NEUTRAL_PROJECT}') == []
    assert _machine_paths(f"{NEUTRAL_PROJECT}-old/x.py") == [f"{NEUTRAL_PROJECT}-old/x.py"]
    trace_line = '{"str": ["/srv/ci/a.py", 0]} {"stack_trace": "x\\n/srv/ci/b.py:3\\t\\"/srv/ci/c.py\\""}'
    assert _machine_paths(trace_line) == ["/srv/ci/a.py", "/srv/ci/b.py", "/srv/ci/c.py"]


def test_recording_rewrites_nested_roots_longest_first():
    roots = sorted({"/m/py": NEUTRAL_BASE, "/m/repo/.venv": NEUTRAL_VENV, "/m/repo": NEUTRAL_PROJECT}.items(),
                   key=lambda pair: -len(pair[0]))
    text = "/m/repo/.venv/lib/torch/x.py /m/repo/scenarios/a.py /m/py/lib/contextlib.py"
    assert neutralize(text, roots) == (
        f"{NEUTRAL_VENV}/lib/torch/x.py {NEUTRAL_PROJECT}/scenarios/a.py {NEUTRAL_BASE}/lib/contextlib.py"
    )


def _tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files to check")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]


def test_no_tracked_file_names_this_checkout():
    checkout = str(ROOT)
    mention = re.compile(re.escape(checkout.encode()) + rb"(?![\w.-])")
    named = [str(path.relative_to(ROOT)) for path in _tracked_files()
             if path.is_file() and not path.is_symlink() and mention.search(path.read_bytes())]
    assert not named, f"tracked files name this checkout's directory {checkout}: {named[:10]}"
