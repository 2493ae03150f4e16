"""What removes a function's guards, by torch version: the table, and the check of a ``--guard-filter`` name.

:data:`REMOVERS` is the one table: each row names a way to have fewer guards (a ``guard_filter_fn`` helper of
``torch.compiler``, a config flag, a compiler stance), the first torch release that has it, what it drops
(an id), what it gives up (an id: ``render/guardfilters.py`` words both) and how guarddiag applies it
(``--guard-filter NAME`` on ``run``, ``--flag compile.guard_filter_fn=NAME`` or ``--flag NAME=V`` on
``compare``, or not at all: a stance set after warm-up is a code change). Facts only, no sentences.

Where each fact comes from (pytorch/pytorch; torch 2.13.0's and 2.14.1's wheels read here):
- ``guard_filter_fn`` as a ``torch.compile`` option: torch 2.8 (``torch/__init__.py`` pops it from
  ``options`` and hands it to ``torch._dynamo.optimize``; 2.13.0 lines 2811-2841). Torch reads it with
  ``options.pop``, so the dict the script passed loses the key.
- the four nn-module/tensor/global helpers: pytorch#155083 (June 2025; named without ``_unsafe`` there,
  renamed before release), in torch 2.9's API docs and 2.13.0's ``torch/compiler/__init__.py`` 711-793.
  torch 2.8 may have them: guarddiag checks the helper itself in the target torch, never the version.
- ``skip_all_guards_unsafe``: in torch 2.10's API docs and in 2.13.0 (``torch/compiler/__init__.py`` 796).
- ``keep_portable_guards_unsafe``: in 2.13.0 (line 687) and 2.14.1; not in the API list of the docs of late
  2025 (torch 2.10).
- ``skip_guard_on_inbuilt_nn_modules_unsafe`` drops guards whose source is an *unspecialized builtin* nn
  module (``GuardSource.is_unspecialized_builtin_nn_module``, ``torch/_guards.py``): only modules Dynamo
  inlines (``inline_inbuilt_nn_modules``, True by default since 2.5) get such sources, so with it False the
  helper drops nothing.
- ``install_free_tensors`` (``torch._dynamo.config``): not in torch 2.4.1's config, in 2.13.0's (line 593)
  and 2.15.0's; it turns tensors the code reads from globals, closures and module attributes into graph
  attributes, so they are not graph inputs with a TENSOR_MATCH guard each.
- ``force_parameter_static_shapes``: in every torch 2.x config read here (2.4.1, 2.13.0, 2.15.0), True
  by default; False lets parameter shapes be dynamic (fewer recompiles when they change, not fewer guards).
- ``set_stance(..., skip_guard_eval_unsafe=True)``: pytorch#139038 (Nov 2024), torch 2.6, with set_stance.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from guarddiag.child._bootstrap import GUARD_FILTER_FLAG
from guarddiag.errors import InputError

# How guarddiag applies a row (Remover.applied).
FILTER = "guard_filter"  # run --guard-filter NAME; compare --flag compile.guard_filter_fn=NAME
FLAG = "flag"  # run/compare --flag NAME=VALUE
CODE_CHANGE = "code_change"  # not applied by guarddiag: the script must call it after warm-up


@dataclass(frozen=True)
class Remover:
    """One way to have fewer guards: ``name`` (a ``torch.compiler`` helper, a config flag, a stance
    keyword), the first torch release known to have it (``since``: the oldest release whose source or docs
    were read and have it; an older one may too), what it drops and what it gives up (ids), how guarddiag
    applies it and the value a flag is set to; ``needs``: a condition it only works under (an id)."""

    name: str
    since: tuple[int, int]
    drops: str
    gives_up: str
    applied: str
    value: str = ""
    needs: str = ""


REMOVERS: tuple[Remover, ...] = (
    Remover("skip_guard_on_inbuilt_nn_modules_unsafe", (2, 9), "inbuilt_module_guards", "inbuilt_module_changes",
            FILTER, needs="inlined_inbuilt_modules"),
    Remover("skip_guard_on_all_nn_modules_unsafe", (2, 9), "module_guards", "module_changes", FILTER),
    Remover("keep_tensor_guards_unsafe", (2, 9), "all_but_tensor_guards", "everything_but_inputs", FILTER),
    Remover("skip_guard_on_globals_unsafe", (2, 9), "global_guards", "global_changes", FILTER),
    Remover("keep_portable_guards_unsafe", (2, 13), "all_but_portable_guards", "everything_but_inputs_and_state", FILTER),
    Remover("skip_all_guards_unsafe", (2, 10), "all_guards", "every_check", FILTER),
    Remover("install_free_tensors", (2, 13), "free_tensor_guards", "free_tensor_changes", FLAG, value="true"),
    Remover("force_parameter_static_shapes", (2, 4), "parameter_shape_recompiles", "static_parameter_shapes", FLAG,
            value="false"),
    Remover("skip_guard_eval_unsafe", (2, 6), "non_differentiating_guards", "unwarmed_inputs", CODE_CHANGE),
)

GUARD_FILTERS: tuple[Remover, ...] = tuple(r for r in REMOVERS if r.applied == FILTER)

# The version a guard_filter_fn option of torch.compile first takes effect in.
FILTER_OPTION_SINCE = (2, 8)


def guard_filter(name: str) -> Remover:
    """The helper row called ``name`` (``torch.compiler.`` may lead it), or an error naming the closest."""
    bare = name.strip().removeprefix("torch.compiler.")
    row = next((r for r in GUARD_FILTERS if r.name == bare), None)
    if row is None:
        names = [r.name for r in GUARD_FILTERS]
        close = difflib.get_close_matches(bare, names, n=2, cutoff=0.5) or names
        raise InputError(f"--guard-filter {name}: not a guard_filter_fn helper guarddiag knows; did you mean {', '.join(close)}?")
    return row


def filter_config(name: str) -> tuple[str, str]:
    """The flip a guard filter is run as: (``compile.guard_filter_fn``, the helper's name)."""
    return (GUARD_FILTER_FLAG, guard_filter(name).name)


def filter_spec(name: str) -> str:
    """``compare --guard-filter NAME`` as the ``--flag`` it stands for (checked: an unknown name is an error)."""
    return "=".join(filter_config(name))


def is_filter(flag: str) -> bool:
    """Whether a flip's name is the guard filter, not a config flag."""
    return flag == GUARD_FILTER_FLAG


def version_text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def guard_filter_since(flags: tuple[tuple[str, str], ...]) -> str | None:
    """The first torch known to have the guard filter among ``flags`` (``2.9``), None without one."""
    name = next((value for flag, value in flags if is_filter(flag)), None)
    row = next((r for r in GUARD_FILTERS if r.name == name), None)
    return version_text(row.since) if row else None


# compare without --flag tries a guard filter when a function's newest cache entry has at least this many guards
# (torch's count): bench/guard_heavy_model.py --blocks 48 has about 1,600 per entry, the scenarios under 300.
GUARD_HEAVY = 1000
# The filter it tries: the one that gives up least (torch's own modules only; the user's modules stay checked).
SUGGESTED_FILTER = "skip_guard_on_inbuilt_nn_modules_unsafe"


def guard_heavy_flips(torch_version: tuple[int, int] | None, newest_counts: list[int | None]) -> tuple[tuple[str, str], ...]:
    """The guard filter compare without ``--flag`` adds to its flips when a function's newest entry is guard-heavy
    and the target torch is known to have the helper; none otherwise."""
    row = guard_filter(SUGGESTED_FILTER)
    if torch_version is None or torch_version < row.since or not any((n or 0) >= GUARD_HEAVY for n in newest_counts):
        return ()
    return (filter_config(SUGGESTED_FILTER),)
