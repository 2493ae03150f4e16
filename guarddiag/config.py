"""Settings for ``baseline`` and ``check``, layered in one place.

Precedence, lowest first: built-in defaults < ``[tool.guarddiag]`` in pyproject.toml (or
``guarddiag.yaml``) < ``GUARDDIAG_*`` environment variables < command-line options.

The settings file is found as pytest and ruff find theirs: in the current folder, then each folder
above it, the first folder holding ``guarddiag.yaml`` or a ``pyproject.toml`` with ``[tool.guarddiag]``
(a pyproject.toml without it is passed over). The search stops after the folder holding ``.git`` (the
top of the repository: a file above it belongs to no project of this checkout) or at the filesystem
root. Both files in one folder is an error: one would be silently ignored. The folder of the file is
the project root: ``scripts`` and ``baseline`` in the file are relative to it, and baseline keys (script
and function files) are relative to it; paths on the command line and in the environment are relative
to the current folder. Without a file, the current folder is the root.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from guarddiag.errors import InputError
from guarddiag.guardbudget import LATENCY_FACTOR, LATENCY_FLOOR_US
from guarddiag.yamlfile import read_yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_BASELINE = "guarddiag-baseline.yaml"


@dataclass(frozen=True)
class ScriptSpec:
    """One script a CI job checks (or a ``module`` run as ``python -m`` runs it, ``path`` empty then):
    its arguments, flags and optional budgets: recompiles, guards and guard latency per function."""

    path: str
    args: tuple[str, ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    max_recompiles: int | None = None
    module: str | None = None
    max_guards: int | None = None
    max_guard_latency_us: float | None = None


@dataclass(frozen=True)
class Settings:
    """Everything ``check`` and ``baseline`` need; see the module docstring for precedence."""

    root: Path = Path(".")
    baseline: str = DEFAULT_BASELINE
    scripts: tuple[ScriptSpec, ...] = ()
    max_recompiles: int | None = None
    # Calls a compiler stance refused to recompile that each function may have (None: what the baseline
    # recorded for it, else 0).
    max_refused_calls: int | None = None
    # Guard budgets per function (guardbudget.py): the most guards of a cache entry, torch's compile-time check
    # of the cheapest entry in microseconds; and how far that latency may grow past the baseline's.
    max_guards: int | None = None
    max_guard_latency_us: float | None = None
    guard_latency_factor: float = LATENCY_FACTOR
    guard_latency_floor_us: float = LATENCY_FLOOR_US
    fail_on_limit_hit: bool = False
    fail_on_new_cause: bool = False
    fail_on_rank_divergence: bool = False
    timeout: float | None = None
    jobs: int | None = None
    python: str = sys.executable
    # The settings file in force, "" when none was found (defaults, environment, command line only).
    source: str = ""
    # Where the command runs: the command line's and environment's paths are relative to it.
    cwd: Path = Path(".")


# GUARDDIAG_<NAME> -> field; the type of each comes from the field's default.
_ENV = {
    "GUARDDIAG_BASELINE": "baseline",
    "GUARDDIAG_MAX_RECOMPILES": "max_recompiles",
    "GUARDDIAG_MAX_REFUSED_CALLS": "max_refused_calls",
    "GUARDDIAG_MAX_GUARDS": "max_guards",
    "GUARDDIAG_MAX_GUARD_LATENCY_US": "max_guard_latency_us",
    "GUARDDIAG_GUARD_LATENCY_FACTOR": "guard_latency_factor",
    "GUARDDIAG_GUARD_LATENCY_FLOOR_US": "guard_latency_floor_us",
    "GUARDDIAG_FAIL_ON_LIMIT_HIT": "fail_on_limit_hit",
    "GUARDDIAG_FAIL_ON_NEW_CAUSE": "fail_on_new_cause",
    "GUARDDIAG_FAIL_ON_RANK_DIVERGENCE": "fail_on_rank_divergence",
    "GUARDDIAG_TIMEOUT": "timeout",
    "GUARDDIAG_JOBS": "jobs",
    "GUARDDIAG_PYTHON": "python",
}
_KINDS = {
    "baseline": str,
    "max_recompiles": int,
    "max_refused_calls": int,
    "max_guards": int,
    "max_guard_latency_us": float,
    "guard_latency_factor": float,
    "guard_latency_floor_us": float,
    "fail_on_limit_hit": bool,
    "fail_on_new_cause": bool,
    "fail_on_rank_divergence": bool,
    "timeout": float,
    "jobs": int,
    "python": str,
}


# The smallest value of each numeric setting, as the command line's options allow (--max-recompiles 0, --jobs 1).
_MINIMUM = {"max_recompiles": 0, "max_refused_calls": 0, "max_guards": 0, "jobs": 1}
# Each number that is not whole: its smallest value (``above``: exclusive) and what it is, for the error.
_FLOORS: dict[str, tuple[float, bool, str]] = {
    "timeout": (0, True, "a number of seconds above 0"),
    "max_guard_latency_us": (0, True, "a number of microseconds above 0"),
    "guard_latency_factor": (1, False, "a factor of 1 or more"),
    "guard_latency_floor_us": (0, False, "a number of microseconds, 0 or more"),
}


def _coerce(name: str, value: object, where: str, text: bool = False) -> object:
    """``value`` of setting ``name`` as its kind. A boolean in a file is true or false (TOML's, or YAML 1.2's:
    a quoted 'yes' is text); ``text`` (an environment variable) also reads 1/0, yes/no, on/off."""
    kind = _KINDS[name]
    if kind is bool:
        if isinstance(value, bool):
            return value
        if not text:
            raise InputError(f"{where}: '{name}' must be true or false, not {value!r}; fix it or remove it")
        if str(value).strip().lower() in ("1", "true", "yes", "on"):
            return True
        if str(value).strip().lower() in ("0", "false", "no", "off", ""):
            return False
    elif kind is int:
        number = _whole(value)
        if number is not None:
            if number < _MINIMUM.get(name, number):
                raise InputError(f"{where}: '{name}' must be {_MINIMUM[name]} or more, not {value!r}; fix it or remove it")
            return number
    elif kind is float:
        number = _number(value)
        if number is not None:
            least, above, what = _FLOORS[name]
            if number < least or above and number == least:
                raise InputError(f"{where}: '{name}' must be {what}, not {value!r}; fix it or remove it")
            return number
    elif isinstance(value, str):
        return value
    raise InputError(f"{where}: '{name}' must be a {kind.__name__}, not {value!r}; fix it or remove it")


def _whole(value: object) -> int | None:
    """An integer from TOML/YAML (3, 3.0) or an environment variable ("3"); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None  # 1.5 and 1.5e400 (inf) are not whole numbers
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _number(value: object) -> float | None:
    """A finite number from TOML/YAML or an environment variable; None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _scripts_from(raw: object, where: str) -> tuple[ScriptSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{where}: 'scripts' must be a list of paths or tables with 'path'; fix it")
    specs = []
    for item in raw:
        if isinstance(item, str):
            specs.append(ScriptSpec(item))
            continue
        path, module = (item.get("path"), item.get("module")) if isinstance(item, Mapping) else (None, None)
        if not (isinstance(path, str) and module is None or isinstance(module, str) and module and path is None):
            raise InputError(f"{where}: each entry of 'scripts' needs a 'path' string or a 'module' string (run as -m), got {item!r}")
        args = item.get("args", [])
        flags = item.get("flags", {})
        if not isinstance(args, list) or not isinstance(flags, Mapping):
            raise InputError(f"{where}: script {path or '-m ' + module}: 'args' must be a list and 'flags' a table")
        budget = item.get("max_recompiles")
        guards, latency = item.get("max_guards"), item.get("max_guard_latency_us")
        specs.append(
            ScriptSpec(
                path or "",
                tuple(str(a) for a in args),
                tuple((str(k), _flag_text(v)) for k, v in flags.items()),
                None if budget is None else int(_coerce("max_recompiles", budget, where)),
                module,
                None if guards is None else int(_coerce("max_guards", guards, where)),
                None if latency is None else float(_coerce("max_guard_latency_us", latency, where)),
            )
        )
    return tuple(specs)


def _flag_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _from_table(table: Mapping[str, object], where: str) -> dict[str, object]:
    known = {f.name for f in fields(Settings)} - {"root", "source", "cwd"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    out: dict[str, object] = {}
    for key, value in table.items():
        out[key] = _scripts_from(value, where) if key == "scripts" else _coerce(key, value, where)
    return out


def _tool_table(pyproject: Path) -> Mapping[str, object] | None:
    """The ``[tool.guarddiag]`` table of a pyproject.toml, None when it has none."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{pyproject}: not valid TOML ({exc}); fix it") from None
    except RecursionError:
        raise InputError(f"{pyproject}: not valid TOML for guarddiag (nested too deeply); fix it") from None
    except OSError as exc:
        raise InputError(f"{pyproject}: cannot read it ({exc.strerror}); fix its permissions") from None
    tool = data.get("tool", {})
    table = tool.get("guarddiag") if isinstance(tool, Mapping) else None
    if table is not None and not isinstance(table, Mapping):
        raise InputError(f"{pyproject}: [tool.guarddiag] must be a table")
    return table


def find_settings_file(start: Path) -> Path | None:
    """The settings file in force from folder ``start`` (the rule is in the module docstring), None if none."""
    here = Path(os.path.abspath(start))
    for folder in (here, *here.parents):
        pyproject, yaml_file = folder / "pyproject.toml", folder / "guarddiag.yaml"
        in_pyproject = pyproject.is_file() and _tool_table(pyproject) is not None
        if in_pyproject and yaml_file.is_file():
            raise InputError(
                f"{folder}: both pyproject.toml [tool.guarddiag] and guarddiag.yaml hold guarddiag settings and only one "
                "can be read; keep them in one file and delete the other"
            )
        if in_pyproject:
            return pyproject
        if yaml_file.is_file():
            return yaml_file
        if (folder / ".git").exists():
            return None
    return None


def read_file_settings(path: Path) -> dict[str, object]:
    """The settings in ``path``: a pyproject.toml's ``[tool.guarddiag]`` table, or a guarddiag.yaml."""
    if path.name == "pyproject.toml":
        return _from_table(_tool_table(path) or {}, f"{path} [tool.guarddiag]")
    try:
        table = read_yaml(path, "settings file", "fix it") or {}
    except FileNotFoundError:
        return {}
    if not isinstance(table, Mapping):
        raise InputError(f"{path}: must be a mapping of settings")
    return _from_table(table, str(path))


def load_settings(cwd: Path, env: Mapping[str, str], cli: Mapping[str, object]) -> Settings:
    """Defaults < file < environment < command line, from folder ``cwd``. ``cli`` holds only options the user gave.
    A ``baseline`` from the environment or the command line is relative to ``cwd``, from the file to its folder."""
    found = find_settings_file(cwd)
    settings = Settings(root=found.parent if found else cwd, source=str(found or ""), cwd=cwd)
    settings = replace(settings, **(read_file_settings(found) if found else {}))
    env_values = {field_name: _coerce(field_name, env[var], var, text=True) for var, field_name in _ENV.items() if env.get(var)}
    given = {k: v for k, v in cli.items() if v is not None}
    outside = {**env_values, **given}
    if "baseline" in outside:
        outside["baseline"] = str(cwd / str(outside["baseline"]))
    return replace(settings, **outside)
