"""Settings for ``baseline`` and ``check``, layered in one place.

Precedence, lowest first: built-in defaults < ``[tool.guarddiag]`` in pyproject.toml (or
``guarddiag.yaml``) < ``GUARDDIAG_*`` environment variables < command-line options.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from guarddiag.errors import InputError
from guarddiag.yamlfile import read_yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_BASELINE = "guarddiag-baseline.yaml"


@dataclass(frozen=True)
class ScriptSpec:
    """One script a CI job checks (or a ``module`` run as ``python -m`` runs it, ``path`` empty then):
    its arguments, flags and an optional recompile budget."""

    path: str
    args: tuple[str, ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    max_recompiles: int | None = None
    module: str | None = None


@dataclass(frozen=True)
class Settings:
    """Everything ``check`` and ``baseline`` need; see the module docstring for precedence."""

    root: Path = Path(".")
    baseline: str = DEFAULT_BASELINE
    scripts: tuple[ScriptSpec, ...] = ()
    max_recompiles: int | None = None
    fail_on_limit_hit: bool = False
    fail_on_new_cause: bool = False
    fail_on_rank_divergence: bool = False
    timeout: float | None = None
    jobs: int | None = None
    python: str = sys.executable
    source: str = "defaults"


# GUARDDIAG_<NAME> -> field; the type of each comes from the field's default.
_ENV = {
    "GUARDDIAG_BASELINE": "baseline",
    "GUARDDIAG_MAX_RECOMPILES": "max_recompiles",
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
    "fail_on_limit_hit": bool,
    "fail_on_new_cause": bool,
    "fail_on_rank_divergence": bool,
    "timeout": float,
    "jobs": int,
    "python": str,
}


# The smallest value of each numeric setting, as the command line's options allow (--max-recompiles 0, --jobs 1).
_MINIMUM = {"max_recompiles": 0, "jobs": 1}


def _coerce(name: str, value: object, where: str) -> object:
    kind = _KINDS[name]
    if kind is bool:
        if isinstance(value, bool):
            return value
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
        seconds = _number(value)
        if seconds is not None:
            if not seconds > 0:
                raise InputError(f"{where}: '{name}' must be a number of seconds above 0, not {value!r}; fix it or remove it")
            return seconds
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
        specs.append(
            ScriptSpec(
                path or "",
                tuple(str(a) for a in args),
                tuple((str(k), _flag_text(v)) for k, v in flags.items()),
                None if budget is None else int(_coerce("max_recompiles", budget, where)),
                module,
            )
        )
    return tuple(specs)


def _flag_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _from_table(table: Mapping[str, object], where: str) -> dict[str, object]:
    known = {f.name for f in fields(Settings)} - {"root", "source"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    out: dict[str, object] = {}
    for key, value in table.items():
        out[key] = _scripts_from(value, where) if key == "scripts" else _coerce(key, value, where)
    return out


def read_file_settings(root: Path) -> tuple[dict[str, object], str]:
    """The ``[tool.guarddiag]`` table of pyproject.toml, else ``guarddiag.yaml``; ({}, "") if neither."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{pyproject}: not valid TOML ({exc}); fix it") from None
        except RecursionError:
            raise InputError(f"{pyproject}: not valid TOML for guarddiag (nested too deeply); fix it") from None
        tool = data.get("tool", {})
        table = tool.get("guarddiag") if isinstance(tool, Mapping) else None
        if table is not None:
            if not isinstance(table, Mapping):
                raise InputError(f"{pyproject}: [tool.guarddiag] must be a table")
            return _from_table(table, f"{pyproject} [tool.guarddiag]"), str(pyproject)
    path = root / "guarddiag.yaml"
    if path.is_file():
        try:
            table = read_yaml(path, "settings file", "fix it") or {}
        except FileNotFoundError:
            return {}, ""
        if not isinstance(table, Mapping):
            raise InputError(f"{path}: must be a mapping of settings")
        return _from_table(table, str(path)), str(path)
    return {}, ""


def load_settings(root: Path, env: Mapping[str, str], cli: Mapping[str, object]) -> Settings:
    """Defaults < file < environment < command line. ``cli`` holds only options the user gave."""
    settings = Settings(root=root)
    file_values, source = read_file_settings(root)
    settings = replace(settings, **file_values, source=source or "defaults")
    env_values = {field_name: _coerce(field_name, env[var], var) for var, field_name in _ENV.items() if env.get(var)}
    settings = replace(settings, **env_values)
    given = {k: v for k, v in cli.items() if v is not None}
    return replace(settings, **given)
