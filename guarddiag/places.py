"""Whose code a line torch names is: the user's, or torch's or an installed library's.

torch names the line behind a guard in two ways. Every version comments each listed guard (and each
failure text) with the innermost frame outside Dynamo's own files, ``code  # file:line in fn``, the file
shortened by ``torch.utils._traceback.shorten_filename``: cut after the path it shares with torch's
own directory, so that torch's files read ``nn/modules/container.py`` and an installed library's
``transformers/models/...``. torch >= 2.11 also prints the whole ``User stack trace:`` under a
recompile's reason, full paths, outermost first: the user's line is its innermost frame in the
user's code. Pure functions over paths.
"""

from __future__ import annotations

import re

# torch's top-level packages and modules, as a shortened file names them first (torch 2.0 to 2.15).
_TORCH_TOP = frozenset((
    "_awaits", "_custom_op", "_custom_ops.py", "_decomp", "_dispatch", "_dynamo", "_export", "_functorch", "_guards.py",
    "_higher_order_ops", "_inductor", "_jit_internal.py", "_library", "_lobpcg.py", "_lowrank.py", "_meta_registrations.py",
    "_numpy", "_ops.py", "_prims", "_prims_common", "_refs", "_subclasses", "_tensor.py", "_tensor_str.py", "_utils.py",
    "_vmap_internals.py", "accelerator", "amp", "ao", "autograd", "backends", "compiler", "cpu", "cuda", "distributed",
    "distributions", "export", "fft", "func", "functional.py", "fx", "jit", "library.py", "linalg", "masked", "mps", "mtia",
    "multiprocessing", "nested", "nn", "onnx", "optim", "overrides.py", "profiler", "quantization", "random.py",
    "serialization.py", "signal", "sparse", "special", "storage.py", "testing", "utils", "xpu",
))
# A file of torch itself (a checkout or an install), of an installed package, or generated code.
_LIBRARY = re.compile(r"(?:^|[/\\])torch[/\\]|[/\\](?:site|dist)-packages[/\\]|^<")
_LOCATION = re.compile(r"^(?P<file>.+):(?P<line>\d+) in (?P<function>\S+)$")


def users_file(file: str, shortened: bool = False) -> bool:
    """Whether ``file`` holds the user's code: not torch's, not an installed library's, not generated
    (``<eval_with_key>``). ``shortened``: a path as a guard's comment names it, where torch's own files
    are relative to torch's directory (``nn/modules/container.py``) and a library's to the folder it is
    installed in (``transformers/...``, which cannot be told from the user's own package of that name:
    read as the user's)."""
    path = file.replace("\\", "/")
    if _LIBRARY.search(path):
        return False
    return not (shortened and path.split("/", 1)[0] in _TORCH_TOP)


def location_file(location: str) -> str:
    """The file of ``file:line in fn``, or ``""``."""
    m = _LOCATION.match(location)
    return m["file"] if m is not None else ""
