"""What several commands read the same way: ``--format``, ``--flag NAME=VALUE``, layered settings."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from guarddiag.errors import INTERRUPTED, SCRIPT_FAILED, GuarddiagError, InputError
from guarddiag.render.formats import FORMATS

if TYPE_CHECKING:
    from guarddiag.config import Settings
    from guarddiag.model import Run


_FLAG_SYNTAX = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)=(?P<value>.*)$")


@dataclass(frozen=True)
class Target:
    """What a command runs: a ``script``, or a ``module`` as ``python -m`` runs it, with its arguments."""

    script: Path | None
    module: str | None
    args: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"-m {self.module}" if self.module else str(self.script)


def run_target(script: str | None, args: list[str] | None, module: str | None, module_args: list[str] | None) -> Target:
    """SCRIPT [-- ARGS] or -m MODULE ARGS, refusing both or neither."""
    if module is None:
        if script is None:
            raise InputError("nothing to run: give a script (guarddiag run train.py) or a module (guarddiag run -m pytest tests/)")
        return Target(Path(script), None, tuple(args or ()))
    if script is not None:
        raise InputError(
            f"{script} and -m {module}: give a script or -m MODULE, not both; everything after -m MODULE is the module's arguments"
        )
    check_module_name(module)
    return Target(None, module, tuple(module_args or ()))


def module_items(items: list[str] | None, module: str | None, module_args: list[str] | None) -> list[str | Target]:
    """``check`` and ``baseline``: the scripts and records named, or the one module run with -m."""
    if module is None:
        return list(items or [])
    return [run_target(" ".join(items) if items else None, None, module, module_args)]


def explain_input(target: str | None, args: list[str] | None, module: str | None, module_args: list[str] | None) -> str | Target:
    """``explain``: a script with its arguments (``train.py -- --epochs 2``, as ``run`` takes them), a log
    or record, or a module run with -m; arguments for a log or a record are refused."""
    if module is None and target is not None:
        if not args:
            return target
        if Path(target).suffix != ".py":
            raise InputError(
                f"{target}: arguments after it ({' '.join(args)[:80]}) are for a script; a torch log or a run record takes none "
                "(give the script: guarddiag explain train.py -- ARGS)"
            )
        return Target(Path(target), None, tuple(args))
    return run_target(target, args, module, module_args)


def check_module_name(module: str) -> None:
    """Refuse what is a file, not a module (``-m train.py``), before anything runs."""
    if not module or "/" in module or os.sep in module or (module.endswith(".py") and Path(module).is_file()):
        stem = Path(module).stem or "MODULE"
        raise InputError(
            f"-m {module}: not a module name; give a script without -m (guarddiag run {module or 'train.py'}), "
            f"or the module's dotted name (-m {stem})"
        )


def check_format(fmt: str) -> None:
    """Refuse an unknown ``--format`` before any work is done."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt}: unknown format; use one of {', '.join(FORMATS)}")


def flag_options(texts: list[str] | None, python: str) -> tuple[tuple[str, str], ...]:
    """``--flag NAME=VALUE`` options. A NAME without a value is looked up in the target torch's flag
    catalog, so the error can name the flag meant (``allow_unspec_int_on_nn_modul``: did you mean ...)."""
    flags = []
    for text in texts or []:
        try:
            flags.append(_checked(parse_flag(text)))
        except InputError:
            if "=" in text or not text.strip().isidentifier() and "." not in text:
                raise
            from guarddiag.flags import load_catalog

            flag = load_catalog(python).resolve(text.strip())  # an unknown name: the closest ones
            example = ("false" if flag.value else "true") if flag.is_bool else "VALUE"
            raise InputError(
                f"--flag {text}: no value; give NAME=VALUE, e.g. --flag {flag.name}={example} (now {flag.value!r})"
            ) from None
    return tuple(flags)


def _checked(flag: tuple[str, str]) -> tuple[str, str]:
    """A guard filter given as ``--flag compile.guard_filter_fn=NAME``, checked against the helpers guarddiag knows."""
    from guarddiag.guardfilters import filter_config, is_filter

    return filter_config(flag[1]) if is_filter(flag[0]) else flag


def parse_flag(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> (name, value); the value is checked against torch's config in the child."""
    m = _FLAG_SYNTAX.match(text)
    if m is None:
        raise InputError(f"--flag '{text}': expected NAME=VALUE, e.g. --flag automatic_dynamic_shapes=false")
    return m["name"], m["value"]


def command_settings(cli: dict[str, object]) -> Settings:
    """Defaults < ``[tool.guarddiag]`` in pyproject.toml < environment < these command-line values."""
    from guarddiag.config import load_settings

    return load_settings(Path.cwd(), os.environ, cli)


def failed_script(target: object, run: Run, covers: str) -> GuarddiagError:
    """The error after the output when the script did not finish cleanly, saying what the output
    ``covers``; exit 3, or 130 when it was interrupted."""
    from guarddiag.render.words import script_outcome

    return GuarddiagError(
        f"{target}: {script_outcome(run)}; {covers}, the torch log is in {run.log_path}",
        INTERRUPTED if run.status == "interrupted" else SCRIPT_FAILED,
    )
