"""torch's config flags as the child sees them: the catalog (``_bootstrap.py --describe``), the checks
and setting of ``--flag`` values, and the flags an exception names.

``_bootstrap.py`` loads this file by path in the target interpreter, where guarddiag itself may not be
installed: standard library only, torch imported where a function needs it.
"""

from __future__ import annotations

import ast
import difflib
import json
import sys
from collections.abc import Sequence

# Flags torch renamed (2.7: cache_size_limit -> recompile_limit, old names kept as aliases since):
# a name from the other side of the rename is the first suggestion when a torch lacks it.
RENAMED = {
    "recompile_limit": "cache_size_limit",
    "accumulated_recompile_limit": "accumulated_cache_size_limit",
    "fail_on_recompile_limit_hit": "fail_on_cache_limit_hit",
    "skip_code_recursive_on_recompile_limit_hit": "skip_code_recursive_on_cache_limit_hit",
}
RENAMED.update({old: new for new, old in list(RENAMED.items())})


def suggestions(key: str, known: list[str]) -> list[str]:
    """Closest valid names: the other name of a renamed flag first, then the nearest spellings."""
    renamed = [RENAMED[key]] if RENAMED.get(key) in known else []
    return renamed + [c for c in difflib.get_close_matches(key, known, n=3, cutoff=0.6) if c not in renamed]


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class FlagError(Exception):
    """A --flag this torch does not have, or a value it does not take; the bootstrap refuses to start."""

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.suggestions = suggestions or []


# Where each --flag lives: the catalog name's prefix and torch's config module. A name without a prefix
# (or with ``dynamo.``) is torch._dynamo.config's; the order is the catalog's.
CONFIG_MODULES = (
    ("", "torch._dynamo.config"),
    ("inductor.", "torch._inductor.config"),
    ("compiler.", "torch.compiler.config"),
    ("fx.", "torch.fx.experimental._config"),
)


def _split_name(name: str) -> tuple[str, str, str]:
    """``fx.backed_size_oblivious`` -> (the config module's name, the key in it, the prefix)."""
    for prefix, module in CONFIG_MODULES[1:]:
        if name.startswith(prefix):
            return module, name[len(prefix) :], prefix
    if name.startswith("dynamo."):
        return CONFIG_MODULES[0][1], name[len("dynamo.") :], "dynamo."
    return CONFIG_MODULES[0][1], name, ""


def _config_module(name: str):
    """The config module a --flag name lives in, the key in it and the prefix it was given with."""
    import importlib

    module_name, key, prefix = _split_name(name)
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        version = getattr(sys.modules.get("torch"), "__version__", "this torch")
        raise FlagError(f"--flag {name}: torch {version} has no {module_name}, where {prefix}NAME flags live") from None
    return module, key, prefix


def catalog_name(dotted: str) -> str:
    """``torch._inductor.config.max_autotune`` -> ``inductor.max_autotune``: the name the catalog lists a
    config entry under (a config alias names its target this way); a module of no prefix stays dotted."""
    module, _, key = dotted.rpartition(".")
    return next((prefix + key for prefix, name in CONFIG_MODULES if name == module), dotted)


def _elsewhere(key: str, searched: str) -> list[str]:
    """The --flag names of ``key`` in the other config modules that have it (``compiler.dynamic_sources``
    for ``dynamic_sources``): the flag meant, given without its prefix or with another one."""
    import importlib

    found = []
    for prefix, module_name in CONFIG_MODULES:
        if module_name == searched:
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if key in _known_names(module):
            found.append(prefix + key)
    return found


def _known_names(module) -> list[str]:
    names = getattr(module, "_config", None)
    if isinstance(names, dict):
        return sorted(names)
    return sorted(n for n in dir(module) if not n.startswith("_"))


def apply_flags(flags: list[dict[str, str]]) -> tuple[dict[str, object], list[str]]:
    """Validate every flag first, then set them all; return the values read back, and what torch
    warned about them (a deprecated flag that does nothing), for guarddiag to say in its own words
    rather than as a warning pointing into this file. Warnings set to be errors still refuse."""
    import re
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        config = _apply_flags_warned(flags)
    notes = []
    for w in caught:
        named = [n for n in config if re.search(rf"(?<!\w){re.escape(n.rpartition('.')[2])}(?!\w)", str(w.message))]
        notes.append(f"--flag {named[0]}: {w.message}" if named else f"torch warned while setting the flags: {w.message}")
    return config, list(dict.fromkeys(notes))


def _apply_flags_warned(flags: list[dict[str, str]]) -> dict[str, object]:
    planned = []
    for flag in flags:
        module, key, prefix = _config_module(flag["name"])
        known = _known_names(module)
        if key not in known and not _has_attr(module, key):
            close = [*_elsewhere(key, module.__name__), *(prefix + c for c in suggestions(key, known))]
            raise FlagError(
                f"unknown config flag '{flag['name']}' in {module.__name__} of torch {sys.modules['torch'].__version__}",
                list(dict.fromkeys(close)),
            )
        try:
            current = getattr(module, key)
        except Exception as exc:  # noqa: BLE001 - e.g. a deprecated flag's FutureWarning under -W error
            raise FlagError(f"torch refused to read --flag {flag['name']}: {exception_line(exc)}") from None
        choices, only = _choices(_annotation(module, key))
        value = parse_value(flag["name"], flag["value"], current, choices, only)
        planned.append((module, key, flag["name"], value))
    for module, key, name, value in planned:
        try:
            setattr(module, key, value)
        except Exception as exc:  # noqa: BLE001 - torch's own validation, reported as a flag error
            raise FlagError(f"torch refused --flag {name}={value!r}: {exception_line(exc)}") from None
    return {name: _jsonable(getattr(module, key)) for module, key, name, _ in planned}


def _annotation(module, key: str) -> object:
    """The declared type of a flag: torch's config entry has it (also for nested names such as
    ``triton.multi_kernel``, torch 2.5+); older torch has only the module's annotations."""
    try:
        entry = (getattr(module, "_config", None) or {}).get(key)
        declared = getattr(entry, "value_type", None)
        return declared if declared is not None else (getattr(module, "__annotations__", None) or {}).get(key)
    except Exception:  # noqa: BLE001 - a config module without readable annotations has no choices
        return None


def _choices(annotation: object) -> tuple[list[object], bool]:
    """The values a flag's ``Literal[...]`` annotation lists, and whether they are all it takes.

    ``Literal["dynamic", "unbacked"]`` (or with ``| None``) takes only those: torch would accept any
    string when set and fail only when the compiler reads it, mid-run. ``bool | Literal[...]``
    (optimize_ddp) takes the listed strings besides its booleans."""
    import typing

    choices: list[object] = []
    only = True
    pending = [annotation]
    while pending:
        a = pending.pop(0)
        origin = typing.get_origin(a)
        if origin is typing.Literal:
            choices += typing.get_args(a)
        elif origin is typing.Union or type(a).__name__ == "UnionType":
            pending += typing.get_args(a)
        elif a is type(None):
            choices.append(None)
        else:
            only = False
    if all(c is None for c in choices):
        return [], False
    return choices, only


def _has_attr(module, key: str) -> bool:
    try:
        getattr(module, key)
    except AttributeError:
        return False
    return True


def parse_value(name: str, raw: str, current: object, choices: Sequence[object] = (), only: bool = False) -> object:
    """A ``--flag`` value as flag ``name`` takes it: one of its listed strings as given (optimize_ddp:
    ``bool | Literal["python_reducer", ...]``), else parsed with the type of its ``current`` value and,
    when its ``choices`` are ``only`` ones, one of them. The child parses with it when it sets the flag,
    guarddiag (``flags.parse_value``) before the run from the catalog: one parser, one refusal."""
    if raw in [c for c in choices if isinstance(c, str)]:
        return raw
    value = _coerce(name, raw, current)
    if only and value == "None" and None in choices:
        return None
    if only and value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise FlagError(f"flag '{name}' takes one of {listed}, not '{raw}'")
    return value


def _coerce(name: str, raw: str, current: object) -> object:
    """Parse a flag value with the type of the flag's current value."""
    text = raw.strip()
    if isinstance(current, bool):
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise FlagError(f"flag '{name}' takes a boolean (true/false), not '{raw}'")
    if isinstance(current, int):
        try:
            return int(text)
        except ValueError:
            raise FlagError(f"flag '{name}' takes an integer, not '{raw}'") from None
    if isinstance(current, float):
        try:
            return float(text)
        except ValueError:
            raise FlagError(f"flag '{name}' takes a number, not '{raw}'") from None
    if isinstance(current, str):
        return raw
    if current is None and text.lower() == "none":
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if current is None:
            return raw
        raise FlagError(f"flag '{name}' takes a Python literal of type {type(current).__name__}, not '{raw}'") from None
    if current is not None and not isinstance(value, type(current)):
        raise FlagError(f"flag '{name}' takes a {type(current).__name__}, not {type(value).__name__} '{raw}'")
    return value


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)



def exception_line(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 300 characters."""
    try:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    except Exception:  # noqa: BLE001 - an exception whose str() fails is still named by its type
        lines = []
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text[:300]


def flags_named_in(text: str, flags: list[dict[str, str]]) -> list[str]:
    """The --flag entries an exception message names: by config name (one with an underscore, not
    a plain word such as ``verbose``), by an environment variable that sets it, or by a part of its
    value quoted in the message (``'nosuch'``)."""
    import re

    named = []
    for flag in flags:
        try:
            module, key, _ = _config_module(flag["name"])
            words = [key, *_env_vars_by_name(module).get(key, [])]
        except Exception:  # noqa: BLE001 - matching is a hint; never fail the run over it
            key, words = flag["name"], [flag["name"]]
        words = [w for w in words if "_" in w or "." in w]
        parts = [p for p in re.split(r"[\s:;,=]+", flag["value"]) if len(p) >= 3]
        quoted = [q + p + q for p in parts for q in ("'", '"')]
        if any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text) for w in words) or any(q in text for q in quoted):
            named.append(f"{flag['name']}={flag['value']}")
    return named


# ---- describe: the config flags of this interpreter's torch, for `guarddiag flags` and `compare` ----

_ENV_CALLS = {"get", "getenv", "get_tristate_env", "_get_env", "environ_get"}
_ENV_KWARGS = {"env_name_default", "env_name_force"}


def _env_vars_by_name(module) -> dict[str, list[str]]:
    """Environment variables each top-level config assignment reads, found in the module's source."""
    try:
        with open(module.__file__, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, TypeError):
        return {}
    found: dict[str, list[str]] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names or getattr(node, "value", None) is None:
            continue
        envs: list[str] = []
        for sub in ast.walk(node.value):
            if isinstance(sub, ast.Call):
                func = sub.func
                fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if fname in _ENV_CALLS and sub.args and isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str):
                    envs.append(sub.args[0].value)
                for kw in sub.keywords:
                    if kw.arg in _ENV_KWARGS:
                        vals = kw.value.elts if isinstance(kw.value, (ast.List, ast.Tuple)) else [kw.value]
                        envs += [v.value for v in vals if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            elif (
                isinstance(sub, ast.Subscript)
                and isinstance(sub.slice, ast.Constant)
                and isinstance(sub.slice.value, str)
                and "environ" in ast.dump(sub.value)
            ):
                envs.append(sub.slice.value)
        for name in names:
            found[name] = sorted(set(envs))
    return found


def describe(out_path: str) -> int:
    """Write every flag of torch's config modules (:data:`CONFIG_MODULES`, those this torch has) with its
    type, default, value, env vars, alias, deprecation."""
    import importlib
    import warnings

    import torch

    flags = []
    for prefix, module_name in CONFIG_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue  # an older torch without torch.compiler.config: its flags are not there to set
        envs = _env_vars_by_name(module)
        entries = getattr(module, "_config", {})
        for key in _known_names(module):
            entry = entries.get(key) if isinstance(entries, dict) else None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    value = getattr(module, key)
                except Exception:  # noqa: BLE001 - a config that cannot be read is listed without a value
                    continue
            if callable(value) or isinstance(value, type(sys)):
                continue
            alias = getattr(entry, "alias", None)
            # An alias has no default of its own: it reads its target.
            default = getattr(entry, "default", value) if entry is not None and not alias else value
            choices, only = _choices(_annotation(module, key))
            flags.append(
                {
                    "name": prefix + key,
                    "type": type(value).__name__,
                    "choices": [_jsonable(c) for c in choices],
                    "choices_only": only,
                    "default": _jsonable(default),
                    "value": _jsonable(value),
                    "env": envs.get(key, []),
                    "alias_of": catalog_name(alias) if alias else None,
                    "deprecated": bool(getattr(entry, "deprecated", False)),
                    "deprecation_message": getattr(entry, "deprecation_message", None),
                }
            )
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump({"torch_version": torch.__version__, "flags": flags}, fh)
    return 0
