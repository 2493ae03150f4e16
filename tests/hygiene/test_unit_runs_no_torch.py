"""The rule "unit tests run no torch" is enforced (tests/unit/conftest.py): a unit test that imports torch,
in its own process or in a child, fails. Checked by running pytest on such tests outside the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

_TESTS = '''
import subprocess, sys

def test_imports_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        pass  # caught, as code that goes on without torch would

def test_starts_a_child_that_imports_torch():
    subprocess.run([sys.executable, "-c", "import torch"], check=False)

def test_runs_no_torch():
    subprocess.run([sys.executable, "-c", "import json"], check=True)
'''


def test_a_unit_test_reaching_torch_fails_and_one_that_does_not_passes(tmp_path: Path):
    unit = tmp_path / "unit"
    shutil.copytree(ROOT / "tests" / "unit" / "_tripwire", unit / "_tripwire")
    shutil.copy(ROOT / "tests" / "unit" / "conftest.py", unit / "conftest.py")
    (unit / "test_example.py").write_text(_TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-rA", str(unit)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:]
    assert "PASSED test_example.py::test_runs_no_torch" in out or "PASSED unit/test_example.py::test_runs_no_torch" in out, out[-3000:]
    assert "this test imported torch; unit tests run no torch" in out, out[-3000:]
    assert "this test imported torch in a child process" in out, out[-3000:]
