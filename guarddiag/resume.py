"""What torch's generated names stand for in the user's code: a resume function after a graph break,
and the stack slots it takes.

After a graph break Dynamo runs the rest of the function as a new code object, a *resume function*,
named after the user's function and the line of the break. torch 2.3+ names it
``torch_dynamo_resume_in_train_step_at_19`` (torch/_dynamo/resume_execution.py,
``TORCH_DYNAMO_RESUME_IN_PREFIX``), torch 2.2 ``resume_in_train_step``, torch 2.1 ``<resume in
train_step>`` and torch 2.0 ``<graph break in train_step>`` (docs/log-formats.md); in every version its
first line (``co_firstlineno``, the line the log names) is the line of the break. torch 2.2's spelling
is a name a user could give a function: it is read only where the caller knows the user's function
was compiled too (``loose``). Values the break left on the stack (a call's result, an operand waiting for it)
become its arguments ``___stack0``, ``___stack1``, ...: guards name them so. Pure functions over names.
"""

from __future__ import annotations

import re

from guarddiag.model import Resume

_PREFIX = "torch_dynamo_resume_in_"
# torch 2.2+: the user's function name may itself hold `_at_`; the line is the last `_at_<digits>`.
_NEW = re.compile(rf"^{_PREFIX}(?P<function>.+)_at_(?P<line>\d+)$")
# torch 2.1 and 2.0: the line is only the code object's first line.
_OLD = re.compile(r"^<(?:resume|graph break) in (?P<function>.+)>$")
_LOOSE = re.compile(r"^resume_in_(?P<function>.+)$")
# A stack slot as a guard's source names it, bare (failure texts of torch >= 2.6) or as a local.
SLOT = re.compile(r"^(?:L\[')?___stack(?P<index>\d+)(?:'\])?")


def resume_of(name: str, line: int | None, loose: bool = False) -> Resume | None:
    """The user's function and line a resume function continues (``line``: its first line as the log
    names it, the line of the break); None for any other name. ``loose`` also reads torch 2.2's
    ``resume_in_f``, which only a caller that knows ``f`` was compiled may take for a resume function."""
    m = _NEW.match(name)
    if m is not None:
        return Resume(_innermost(m["function"]), int(m["line"]))
    m = _OLD.match(name) or (_LOOSE.match(name) if loose else None)
    if m is not None:
        return Resume(_innermost(m["function"]), line)
    return None


def _innermost(function: str) -> str:
    """A name torch built from a resume function's own name (not seen in torch 2.0 to 2.15, which name
    every resume function after the original code) read down to the user's function."""
    found = resume_of(function, None)
    return found.function if found is not None else function


def slot_index(source: str) -> int | None:
    """``2`` for ``L['___stack2']`` (or ``___stack2.shape``); None for a source that is no stack slot."""
    m = SLOT.match(source)
    return int(m["index"]) if m is not None else None


def slot_name(index: int) -> str:
    """The argument name torch gives the stack slot ``index`` of a resume function: ``___stack0``."""
    return f"___stack{index}"
