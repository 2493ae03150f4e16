"""guarddiag: diagnose torch.compile recompiles from its guard and recompile logs.

In-process API: ``with guarddiag.watch() as w: ...; assert w.recompiles == 0, w.report()``
(see docs/pytest.md). It is imported on first use, so the command line starts without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["Watch", "WatchError", "__version__", "watch"]

if TYPE_CHECKING:
    from guarddiag.inprocess import Watch, WatchError, watch


def __getattr__(name: str) -> object:
    if name in ("watch", "Watch", "WatchError"):
        from guarddiag import inprocess

        return getattr(inprocess, name)
    raise AttributeError(f"module 'guarddiag' has no attribute {name!r}")
