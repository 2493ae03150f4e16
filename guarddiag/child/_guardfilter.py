"""Applies ``--guard-filter NAME`` in the child: every compile the script starts gets
``guard_filter_fn=torch.compiler.NAME``.

Loaded by path by ``_bootstrap.py`` (standard library and torch only). ``torch.compile`` (a decorator, a
call, ``nn.Module.compile``) ends in ``torch._dynamo.optimize(..., guard_filter_fn=...)`` with the filter
it popped from ``options``, so wrapping that one function covers every way to compile; a script that passes
its own filter is refused (one filter per compile: guarddiag cannot say which one the figures are of).
"""

from __future__ import annotations

import functools


class Missing(Exception):
    """The target torch has no such helper, or no way to take a filter."""


class Taken(BaseException):
    """The script passed its own ``guard_filter_fn``. A BaseException: a script's ``except Exception``
    around its compile must not swallow the refusal."""


def install(name: str, since: str) -> None:
    """Wrap ``torch._dynamo.optimize`` so each compile without a filter gets ``torch.compiler.<name>``."""
    import inspect

    import torch
    import torch._dynamo

    helper = getattr(torch.compiler, name, None)
    if not callable(helper):
        raise Missing(
            f"--guard-filter {name}: torch {torch.__version__} has no torch.compiler.{name} (first in torch {since}); "
            "use a torch that has it, or another filter"
        )
    original = torch._dynamo.optimize
    try:
        takes = "guard_filter_fn" in inspect.signature(torch._dynamo.eval_frame._optimize).parameters
    except (AttributeError, TypeError, ValueError):
        takes = False
    if not takes:
        raise Missing(
            f"--guard-filter {name}: torch {torch.__version__} takes no guard_filter_fn in torch.compile (torch 2.8 and later do)"
        )

    @functools.wraps(original)
    def optimize(*args, **kwargs):
        given = kwargs.get("guard_filter_fn")
        if given is None:
            kwargs["guard_filter_fn"] = helper
        elif given is not helper:
            raise Taken(
                f"--guard-filter {name}: the script passes its own guard_filter_fn "
                f"({getattr(given, '__qualname__', type(given).__name__)}) to torch.compile, and a compile takes one; "
                "drop --guard-filter, or the script's filter"
            )
        return original(*args, **kwargs)

    torch._dynamo.optimize = optimize
