"""What the user compiled when torch compiled a wrapper: the function or module behind ``inner``.

Every ``@torch.no_grad()`` function and every compiled ``nn.Module`` that torch wraps (a compiled
``nn.Sequential``) compile torch's own ``inner`` (torch/_dynamo/external_utils.py); libraries wrap
methods in decorators of their own (transformers' ``wrapper``). The frame torch names is the
wrapper's, the same for all of them. The wrapped callable is a local of that frame (``fn``, ``func``)
and its guards say who it is: a module by its type (``___check_type_id(L['fn'], ...),
type=<class '...Sequential'>``), a function by the code lines its guards came from (``# ...  #
train.py:27 in sgd_momentum``), a method by the type of ``L['self']``.

Pure: one cache entry's guards in, a :class:`~guarddiag.model.CompiledFor` (or None) out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from guarddiag.ids import CompileId
from guarddiag.logparse.guards import location_of
from guarddiag.model import Cause, CompiledFor, FunctionSummary, Guard, Source
from guarddiag.places import users_file
from guarddiag.sourceinfo import compiled_parameters, resolve_shortened

# Locals through which a wrapper calls what it wraps (torch's `fn`, functools-style `func`, `f`).
_WRAPPED = frozenset({"fn", "func", "f", "function", "wrapped", "mod", "module"})
_ROOT = re.compile(r"^L\['(\w+)'\]")
_TYPE = re.compile(r"type=<class '(?P<qual>[\w.]+)'>")
_NOT_A_CLASS = frozenset({"function", "method", "builtin_function_or_method", "functools.partial", "code", "cell", "tuple"})
_LOCATION = re.compile(r"^(?P<file>.+):(?P<line>\d+) in (?P<name>[\w<>.]+)$")
_TORCH = re.compile(r"(?:^|[/\\])torch[/\\]")


_PACKAGE = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<package>[A-Za-z_]\w*)")


def library_frame(file: str) -> bool:
    """Whether a frame's code is torch's or an installed library's (where wrappers live), not the user's."""
    return torch_wrapper(file) or "-packages" in file


def torch_wrapper(file: str) -> bool:
    """Whether a frame is torch's own ``inner``, which calls what the user compiled (a no_grad function, a module)."""
    return "external_utils.py" in file


def frame_package(file: str | None) -> str:
    """The installed package a frame's code is in (``torch``, ``transformers``), or ``""`` (the user's code)."""
    m = _PACKAGE.search(file or "")
    return m["package"] if m else ""


def wrapped_callable(guards: Sequence[Guard], frame_name: str = "") -> CompiledFor | None:
    """What one cache entry of a wrapper frame was compiled for; None when the frame wraps nothing
    (no guard on a local such as ``fn``) or its guards came from the frame's own code (``frame_name``):
    then the frame's own name is the user's."""
    root = module = owner = ""
    for g in guards:
        m = _ROOT.match(g.source)
        if m is None:
            continue
        name = m.group(1)
        if name in _WRAPPED and not root:
            root = name
        if g.kind == "TYPE_MATCH" and g.source == f"L['{name}']":
            qual = _TYPE.search(g.expr)
            cls = qual["qual"].rpartition(".")[2] if qual else ""
            if cls and qual["qual"] not in _NOT_A_CLASS and cls not in _NOT_A_CLASS:
                if name in _WRAPPED:
                    module = cls
                elif name == "self":
                    owner = cls
    if not root:
        return None
    if module:
        return CompiledFor(module, "", "module")
    name, file = _traced_function(guards)
    if not name or name == frame_name:
        return None
    return CompiledFor(f"{owner}.{name}" if owner and not name.startswith(owner) else name, file, "method" if owner else "function")


def _traced_function(guards: Sequence[Guard]) -> tuple[str, str]:
    """The function most guards were installed for (``file:line in NAME`` of their comments): the
    user's own code first, else a library's; never torch's."""
    found: Counter[tuple[str, str]] = Counter()
    for g in guards:
        where = g.location or (location_of(g.comment) if g.comment else "")
        m = _LOCATION.match(where)
        if m is None or _TORCH.search(m["file"]) or not users_file(m["file"], shortened=True) and "-packages" not in m["file"]:
            continue  # torch's own code (``nn/modules/linear.py``, shortened)
        found[(m["name"], m["file"])] += 1
    if not found:
        return "", ""
    user = [k for k in found if users_file(k[1], shortened=True)]
    best = max(user or found, key=lambda k: found[k])
    return best[0], best[1]


def wrapped_parameters(
    f: FunctionSummary, known_files: Iterable[str]
) -> tuple[CompiledFor | None, Mapping[int, str], frozenset[CompileId]]:
    """The function torch's ``inner`` frame ``f`` ran, the name of each of its positional arguments
    (``{2: "lr"}``), and the cache entries whose failing guard was read in it (compile ids); None and
    empty when that cannot be known."""
    unknown: tuple[CompiledFor | None, Mapping[int, str], frozenset[str]] = (None, {}, frozenset())
    if not torch_wrapper(f.file):
        return unknown
    files = tuple(known_files)
    found: dict[tuple[str, str, int], tuple[str, ...]] = {}
    entries: set[CompileId] = set()
    for event in f.recompile_events:
        for c in (*event.causes, *event.also):
            m = _LOCATION.match(c.location)
            if m is None or frame_package(m["file"]):
                continue
            key = (m["file"], m["name"], int(m["line"]))
            if key not in found:
                path = resolve_shortened(m["file"], files)
                params = compiled_parameters(path, m["name"], int(m["line"])) if path else None
                if params is None:
                    continue
                found[key] = params
            if c.cache_entry:
                entries.add(c.cache_entry)
    functions = {(file, name): params for (file, name, _), params in found.items()}
    if len(functions) != 1:
        return unknown  # none known, or two compiled functions share the wrapper: which is which is not known
    ((file, name), params), = functions.items()
    if params[:1] in (("self",), ("cls",)):
        return unknown  # a method: whether torch got it bound is not in the log
    return CompiledFor(name, file, "function"), dict(enumerate(params)), frozenset(entries)


_INDEX = re.compile(r"^\[(\d+)\]")


def renamed_source(src: Source | None, params: Mapping[int, str]) -> Source | None:
    """``args[2]`` (torch's ``inner``'s ``args``, an argument or a local) as the wrapped function's argument ``lr``;
    ``args[0].w`` as ``p.w``; any other source as it is."""
    if src is None or src.root != "args" or src.role not in ("argument", "local"):
        return src
    m = _INDEX.match(src.path)
    if m is None or int(m[1]) not in params:
        return src
    return replace(src, root=params[int(m[1])], role="argument", path=src.path[m.end() :])


def renamed_cause(c: Cause, params: Mapping[int, str]) -> Cause:
    """A cause with ``args[i]`` named by the wrapped function's parameter (its object and the objects it found aliased)."""
    if not params:
        return c
    return replace(c, guarded=renamed_source(c.guarded, params), aliased=tuple(renamed_name(n, params) for n in c.aliased))


def renamed_name(name: str, params: Mapping[int, str]) -> str:
    """``args[2]`` -> ``lr``, ``args[0][1]`` -> ``params[1]``; any other name as it is."""
    m = re.match(r"^args\[(\d+)\]", name)
    return params[int(m[1])] + name[m.end() :] if m and int(m[1]) in params else name


def with_named_arguments(functions: Sequence[FunctionSummary]) -> tuple[FunctionSummary, ...]:
    """The functions with the causes of torch's ``inner`` frame named by the wrapped function's
    parameters (``value of `args[2]` on argument `args``` -> ``value of argument `lr```), in the cache
    entries whose failing guard was read in that function (explain names its rows alike)."""
    files = tuple(f.file for f in functions)
    return tuple(_named(f, files) for f in functions)


def _named(f: FunctionSummary, files: tuple[str, ...]) -> FunctionSummary:
    _, params, located = wrapped_parameters(f, files)
    if not params:
        return f

    def cause(c: Cause, entry: CompileId | None) -> Cause:
        return renamed_cause(c, params) if entry in located else c

    events = tuple(
        replace(e, causes=tuple(cause(c, c.cache_entry) for c in e.causes), also=tuple(cause(c, e.causes[0].cache_entry) for c in e.also))
        for e in f.recompile_events
    )
    return replace(f, recompile_events=events)
