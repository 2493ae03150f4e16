"""``guarddiag flags``: the config flags of the target torch, filtered."""

from __future__ import annotations

from guarddiag.commands.options import check_format
from guarddiag.commands.output import echo
from guarddiag.flags import Catalog, Flag
from guarddiag.render.flags import FlagList


def flags_command(python: str, pattern: str | None, show_all: bool, fmt: str) -> None:
    """Load the target torch's catalog and print the flags asked for."""
    from guarddiag.flags import load_catalog
    from guarddiag.render.flags import render_flags

    check_format(fmt)
    echo(render_flags(select_flags(load_catalog(python), pattern, show_all), fmt))


def removers_command(python: str, fmt: str) -> None:
    """What removes guards, each marked for the target torch's version (read from its flag catalog)."""
    from guarddiag.flags import load_catalog
    from guarddiag.flips import torch_version_tuple
    from guarddiag.render.guardfilters import render_removers

    check_format(fmt)
    version = load_catalog(python).torch_version
    echo(render_removers(version, torch_version_tuple(version), fmt))


def select_flags(catalog: Catalog, pattern: str | None, show_all: bool) -> FlagList:
    """The flags whose name contains ``pattern``; inductor flags only with --all or an inductor pattern,
    internal names only with --all."""
    wanted = tuple(
        f
        for f in catalog.flags.values()
        if (pattern is None or pattern.lower() in f.name.lower())
        and (show_all or not f.name.startswith("inductor.") or (pattern or "").startswith("inductor"))
        and (show_all or not _internal(f))
    )
    return FlagList(catalog.torch_version, wanted, show_all)


def _internal(flag: Flag) -> bool:
    """Not a setting a user tunes: a private name, a module constant (TYPE_CHECKING), or where torch is
    installed (base_dir: an absolute path as its value)."""
    name = flag.name.rpartition(".")[2]
    value = flag.value if isinstance(flag.value, str) else ""
    return name.startswith("_") or name.isupper() or value.startswith("/")
