"""Unit tests run no torch (tests/README.md): importing it here, or in a Python process a unit test starts,
fails the test with the place to move it to. Tests that need torch belong in tests/e2e or tests/realtorch."""

from __future__ import annotations

import importlib.abc
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The property tests' examples: "ci" in make test (each property a few seconds), "long" in make fuzz
# (HYPOTHESIS_PROFILE=long: 10,000 per property, minutes). Tests that render a whole run per example take a
# fraction of the profile's count (tests/unit/render/test_escape.py).
settings.register_profile("ci", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_TRIPWIRE = Path(__file__).resolve().parent / "_tripwire"
_MOVE = "unit tests run no torch: move this test to tests/e2e/<command>/ or tests/realtorch/ (tests/README.md)"


class _NoTorch(importlib.abc.MetaPathFinder):
    """Refuses ``import torch`` in the test process itself."""

    def __init__(self) -> None:
        self.tried: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            # Kept as well as raised: code under test may catch the ImportError and go on without torch.
            self.tried.append(name)
            raise ImportError(f"{name} imported by a unit test; {_MOVE}")
        return None


@pytest.fixture(autouse=True)
def _no_torch(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Fail a unit test that imported torch, here or in a child process it started."""
    # Under ``make test`` a worker may have run a test of tests/e2e or tests/realtorch that imports torch
    # in-process (the watch's): then an import here is not seen, and only child processes are checked.
    # ``make test-fast`` (unit tests alone) always checks both.
    torch_before = "torch" in sys.modules
    marker = tmp_path_factory.mktemp("torch-tripwire") / "imports"
    monkeypatch.setenv("GUARDDIAG_UNIT_TORCH_MARKER", str(marker))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(_TRIPWIRE), os.environ.get("PYTHONPATH", "")) if p))
    finder = _NoTorch()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
    if finder.tried or ("torch" in sys.modules and not torch_before):
        pytest.fail(f"this test imported {', '.join(finder.tried) or 'torch'}; {_MOVE}")
    if marker.exists():
        pytest.fail(f"this test imported torch in a child process; {_MOVE}")
