"""Config flags of the torch in a target interpreter: names, aliases, types, env vars, deprecation.

The catalog is read in the child (``_bootstrap.py --describe``), never from a hard-coded
list: torch 2.4 and torch 2.13 disagree on what ``inline_inbuilt_nn_modules`` even does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from guarddiag.child import _bootstrap
from guarddiag.child._torchflags import FlagError
from guarddiag.child._torchflags import parse_value as parse_flag_value
from guarddiag.errors import InputError
from guarddiag.store import write_atomic

# Bump when the describe output changes shape: old cache entries are then ignored.
# /4: torch.compiler.config (``compiler.``) and torch.fx.experimental._config (``fx.``) are listed, and
# ``alias_of`` is the catalog name of the alias's target (``inductor.NAME`` where it is inductor's).
SCHEMA = "guarddiag.flags/4"

# The prefixes of flags outside torch._dynamo.config (CONFIG_MODULES of child/_torchflags.py).
_PREFIXES = tuple(prefix for prefix, _ in _bootstrap.CONFIG_MODULES if prefix)

# The child parses a value with the type of the flag's current value (child/_torchflags.parse_value); the
# catalog keeps that type's name, and a value of the type stands in for it. Other types are checked in the child.
_OF_TYPE: dict[str, object] = {"bool": False, "int": 0, "float": 0.0, "str": ""}


@dataclass(frozen=True)
class Flag:
    """One config flag as the target torch defines it."""

    name: str
    type: str
    default: object
    value: object
    env: tuple[str, ...] = ()
    alias_of: str | None = None
    deprecated: bool = False
    deprecation_message: str | None = None
    # The values a Literal[...] annotation lists; with choices_only, the only values the flag takes.
    choices: tuple[object, ...] = ()
    choices_only: bool = False

    @property
    def is_bool(self) -> bool:
        return self.type == "bool"

    def no_op_reason(self) -> str | None:
        """Why setting this flag changes nothing in this torch, or None when it may."""
        if self.deprecated:
            return self.deprecation_message or "deprecated"
        return None


@dataclass(frozen=True)
class Catalog:
    """Every flag of one torch, by name."""

    torch_version: str
    flags: dict[str, Flag]

    def resolve(self, name: str) -> Flag:
        """The flag called ``name`` (its config module's prefix: none or ``dynamo.``, ``inductor.``,
        ``compiler.``, ``fx.``), or an error naming the closest ones: the same name under another
        prefix first (``compiler.dynamic_sources`` for ``dynamic_sources``)."""
        key = name[len("dynamo.") :] if name.startswith("dynamo.") else name
        flag = self.flags.get(key)
        if flag is None:
            bare = key.partition(".")[2] if key.startswith(_PREFIXES) else key
            elsewhere = [p + bare for p in ("", *_PREFIXES) if p + bare in self.flags]
            close = self._one_per_flag([*elsewhere, *_bootstrap.suggestions(key, list(self.flags))])[:3]
            hint = f" (did you mean: {', '.join(close)}?)" if close else ""
            raise InputError(
                f"unknown config flag '{name}' in torch {self.torch_version}{hint}; `guarddiag flags` lists them"
            )
        return flag

    def _one_per_flag(self, names: list[str]) -> list[str]:
        """The names in order, one per flag they set: an alias (``compiler.allow_unspec_int_on_nn_module`` of
        ``allow_unspec_int_on_nn_module``) after its target, or a second alias of one, is the same suggestion."""
        seen: set[str] = set()
        kept = []
        for name in names:
            flag = self.flags.get(name)
            target = self.target(flag).name if flag is not None else name
            if target not in seen:
                seen.add(target)
                kept.append(name)
        return kept

    def target(self, flag: Flag) -> Flag:
        """The flag an alias stands for (``cache_size_limit`` -> ``recompile_limit``,
        ``compiler.recompile_limit`` -> ``recompile_limit``), else the flag itself."""
        if flag.alias_of is None:
            return flag
        return self.flags.get(flag.alias_of, flag)


def flag_name(setting: str) -> str:
    """The ``--flag`` name of a dotted config setting: ``torch.compiler.config.dynamic_sources`` ->
    ``compiler.dynamic_sources``, ``torch._dynamo.config.recompile_limit`` -> ``recompile_limit``."""
    module, _, key = setting.rpartition(".")
    return next((prefix + key for prefix, name in _bootstrap.CONFIG_MODULES if name == module), setting)


def free_text(flag: Flag) -> bool:
    """A flag whose value is free text (``compiler.dynamic_sources`` takes ``L['x']:0,L['y']``): a comma in
    ``--flag NAME=V1,V2`` is part of the one value, not a separator between values to try."""
    return flag.type == "str" and not flag.choices_only


def parse_value(flag: Flag, raw: str) -> object:
    """Check a value against the flag's type and listed choices, with the parser the child sets it with."""
    try:
        return parse_flag_value(flag.name, raw, _OF_TYPE.get(flag.type), flag.choices, flag.choices_only)
    except FlagError as exc:
        raise InputError(str(exc)) from None


# How long an interpreter may take to start and find torch (no import) before it is called hung.
PROBE_TIMEOUT = 30.0


def _torch_fingerprint(python: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Where the interpreter's torch lives and when it was installed, without importing it (fast)."""
    probe = (
        "import importlib.util, os, sys; s = importlib.util.find_spec('torch'); "
        "f = s.origin if s and s.origin else ''; v = os.path.join(os.path.dirname(f), 'version.py'); "
        "print(os.path.realpath(sys.executable), f, os.stat(v).st_mtime_ns if f and os.path.exists(v) else '')"
    )
    try:
        proc = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        # It would hang reading the flags too: say so now, not after the catalog's own time-out.
        raise InputError(
            f"--python {python}: did not start within {timeout:.0f}s (a start-up hook or site package that hangs?); "
            "fix it or pick another --python"
        ) from None
    except OSError:
        return None
    text = proc.stdout.strip()
    if proc.returncode != 0 or not text or text.split(" ")[1:2] == [""]:
        return None
    # Config values read environment variables at import: they are part of what was described.
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(("TORCH", "PYTORCH")) and k != "TORCH_LOGS")
    return hashlib.sha256(f"{SCHEMA}|{text}|{env}".encode()).hexdigest()[:24]


def load_catalog(python: str, timeout: float | None = None, cache_dir: Path | None = Path(".guarddiag/cache")) -> Catalog:
    """The target interpreter's config flags, from a cache keyed by that torch install, else read in a child.

    Reading them imports torch (seconds); compare needs them before any run, so they are kept. ``timeout``
    (compare's --timeout) bounds each step, 300 s at most for reading the flags.
    """
    timeout = 300.0 if timeout is None else timeout
    key = _torch_fingerprint(python, min(PROBE_TIMEOUT, timeout)) if cache_dir is not None else None
    cached = cache_dir / f"flags-{key}.json" if cache_dir is not None and key else None
    if cached is not None and cached.exists():
        try:
            return catalog_from_dict(json.loads(cached.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache entry is read again below and replaced
    data = _describe(python, timeout)
    if cached is not None:
        with contextlib.suppress(OSError):  # a cache that cannot be written costs time, not correctness
            write_atomic(cached, json.dumps(data))
    return catalog_from_dict(data)


def cached_catalog(python: str, cache_dir: Path = Path(".guarddiag/cache")) -> Catalog | None:
    """The catalog of this interpreter's torch when it is cached (no torch import), else None."""
    key = _torch_fingerprint(python)
    cached = cache_dir / f"flags-{key}.json" if key else None
    if cached is None or not cached.is_file():
        return None
    try:
        return catalog_from_dict(json.loads(cached.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_flags(catalog: Catalog, flags: tuple[tuple[str, str], ...]) -> None:
    """Refuse an unknown flag or an ill-typed value the way the child would, without starting torch."""
    from guarddiag.guardfilters import guard_filter, is_filter

    for name, value in flags:
        if is_filter(name):
            guard_filter(value)  # a torch.compile option, not a config flag: checked against the helpers guarddiag knows
            continue
        parse_value(catalog.target(catalog.resolve(name)), value)


def _describe(python: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="guarddiag-flags-") as tmp:
        out = Path(tmp) / "flags.json"
        try:
            proc = subprocess.run(
                [python, _bootstrap.__file__, "--describe", str(out)], capture_output=True, text=True, timeout=timeout
            )
        except FileNotFoundError:
            raise InputError(f"--python {python}: no such interpreter; give the path of a Python that has torch") from None
        except subprocess.TimeoutExpired:
            raise InputError(f"--python {python}: reading torch's config took over {timeout:.0f}s; check that torch imports") from None
        if proc.returncode != 0 or not out.exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise InputError(f"--python {python}: cannot read torch's config flags ({last}); is torch installed there?")
        return json.loads(out.read_text(encoding="utf-8"))


def catalog_from_dict(data: dict) -> Catalog:
    """A catalog from the JSON ``_bootstrap.py --describe`` writes."""
    flags = {
        f["name"]: Flag(
            name=f["name"],
            type=f["type"],
            default=f["default"],
            value=f["value"],
            env=tuple(f.get("env", ())),
            alias_of=f.get("alias_of"),
            deprecated=bool(f.get("deprecated")),
            deprecation_message=f.get("deprecation_message"),
            choices=tuple(f.get("choices", ())),
            choices_only=bool(f.get("choices_only")),
        )
        for f in data["flags"]
    }
    return Catalog(torch_version=data["torch_version"], flags=flags)
