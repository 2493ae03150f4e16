"""Not torch: put first on the path of every Python process a unit test starts (tests/unit/conftest.py),
so that a unit test reaching torch through a child process is named and failed, not silently slow."""

import os

_marker = os.environ.get("GUARDDIAG_UNIT_TORCH_MARKER")
if _marker:
    with open(_marker, "a", encoding="utf-8") as out:
        out.write(os.environ.get("PYTEST_CURRENT_TEST", "?") + "\n")
raise ImportError("a unit test imported torch in a child process: unit tests run no torch (tests/README.md)")
