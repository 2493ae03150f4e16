"""Start-up hook of the Python processes a script run by guarddiag starts itself (spawn workers,
subprocesses): guarddiag puts this folder on their PYTHONPATH.

Once such a process imports torch, its log handlers are created while ``sys.stderr`` is a file
of its own in the run folder (``torch.child-<pid>.log``), as the main process's are: its torch
logs are kept and parsed instead of flooding the terminal; torch's own record of its compiles goes
beside it (``_guarddiag_process``), and hooks it adds to compiled modules late are watched
(``_guarddiag_hooks``), calls a compiler stance refused to recompile are counted into that record
(``_guarddiag_stance``); a torchrun worker notes its rank beside its log. Standard library only;
it never imports torch itself, and it hands over to any ``sitecustomize`` the environment already had.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_LOG_DIR = os.environ.get("GUARDDIAG_CHILD_LOG_DIR")  # _guarddiag_process.RUN_MARK


def _chain_previous_sitecustomize():
    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def _own_log():
    """This process's log file, where its torch log handlers are created (None: the run folder is
    gone, the script removed it; torch logs where it would)."""
    path = os.path.join(_LOG_DIR, f"torch.child-{os.getpid()}.log")
    try:
        own = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the process
    except OSError:
        return None
    if not _FORKS_ROUTED:
        _FORKS_ROUTED.append(True)
        _guarddiag_process.route_forks(_LOG_DIR, own)
    return own


_FORKS_ROUTED: list = []

try:
    _chain_previous_sitecustomize()
finally:
    if _LOG_DIR and os.path.isdir(_LOG_DIR):
        import _guarddiag_process

        # Right after torch._logging._internal is loaded, before torch calls its _init_logs.
        sys.meta_path.insert(
            0, _guarddiag_process.AfterImport("torch._logging._internal", lambda m: _guarddiag_process.route_log_setups(m, _own_log))
        )
        _guarddiag_process.note_observed(_LOG_DIR)
        _guarddiag_process.note_rank(_LOG_DIR)
        _sink = _guarddiag_process.FileSink(_guarddiag_process.child_ledger_path(_LOG_DIR, os.getpid()))
        _guarddiag_process.add_sink(_sink)
        _guarddiag_process.ledger_at_exit(_sink)
        import _guarddiag_hooks

        _guarddiag_hooks.install(_LOG_DIR)
        import _guarddiag_stance

        _guarddiag_stance.install()
