"""Reading the YAML files users commit (the baseline, ``guarddiag.yaml``): one ladder of errors.

Anchors and aliases are refused: guarddiag writes none, and a few nested aliases expand into
billions of values (a 1 KB "billion laughs" file took minutes and gigabytes).

Plain (unquoted) scalars are read by one rule: a number is plain decimal (``12``, ``-3``, ``1.5``), a
boolean is ``true`` or ``false``, ``null``/``~``/nothing is null, anything else is text. A plain scalar
that YAML 1.1 (PyYAML's default: ``010`` is 8, ``0x10`` 16, ``1:30`` 90, ``yes`` true) or YAML 1.2
(``0o10``, ``1e3``, ``.5``) reads as another number or boolean is refused, naming its line and
what to write: a budget of ``010`` must not silently be 8. A scalar tagged ``!!int``, ``!!float`` or
``!!bool`` is held to the same rule: its tag makes PyYAML read ``!!int 010`` as 8 whatever the resolvers say.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from guarddiag.errors import InputError

_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
# What guarddiag reads as a number or boolean (each reads the same in YAML 1.1 and 1.2).
_DECIMAL_INT = re.compile(r"^-?(?:0|[1-9][0-9]*)$")
_DECIMAL_FLOAT = re.compile(r"^-?(?:0|[1-9][0-9]*)\.[0-9]+$")
_BOOLEAN = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULLS = re.compile(r"^(?:~|null|Null|NULL|)$")
# YAML 1.2 core schema numbers, for what 1.2 reads as a number and guarddiag does not (0o10, 1e3, .5, +5).
_CORE_12 = re.compile(
    r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


class _AliasRefused(yaml.YAMLError):
    def __init__(self, line: int) -> None:
        super().__init__(f"anchor or alias at line {line}")
        self.line = line


class _AmbiguousScalar(yaml.YAMLError):
    def __init__(self, line: int, key: str | None, value: str) -> None:
        super().__init__(f"ambiguous scalar {value!r} at line {line}")
        self.line, self.key, self.value = line, key, value


def _yaml11_tag(value: str) -> str | None:
    """The tag YAML 1.1 (PyYAML's SafeLoader) gives a plain scalar, if it is a number or boolean."""
    for tag, pattern in yaml.SafeLoader.yaml_implicit_resolvers.get(value[:1], []):
        if tag in (_INT, _FLOAT, _BOOL) and pattern.match(value):
            return tag
    return None


class NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without anchors and aliases, reading plain scalars by the rule in the module docstring."""

    # Only the resolvers of the rule: no octal, hex, sexagesimal, underscores, yes/no/on/off, dates or merge keys.
    yaml_implicit_resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _AliasRefused(event.start_mark.line + 1)
        if isinstance(event, yaml.ScalarEvent) and (_ambiguous_plain(self, event) or _ambiguous_tagged(event)):
            key = index.value if isinstance(parent, yaml.MappingNode) and isinstance(index, yaml.ScalarNode) else None
            raise _AmbiguousScalar(event.start_mark.line + 1, key, event.value)
        return super().compose_node(parent, index)


def _ambiguous_plain(loader: NoAliasLoader, event: yaml.ScalarEvent) -> bool:
    """A plain scalar the rule reads as text that YAML 1.1 or 1.2 reads as a number or boolean."""
    if not event.implicit[0] or loader.resolve(yaml.ScalarNode, event.value, (True, False)) != _STR:
        return False
    return bool(_yaml11_tag(event.value) or _CORE_12.match(event.value))


def _ambiguous_tagged(event: yaml.ScalarEvent) -> bool:
    """A scalar tagged ``!!int``, ``!!float`` or ``!!bool`` whose text the rule does not read as one:
    SafeLoader's own constructors read ``!!int 010`` as 8, ``!!int 0x10`` as 16, ``!!bool yes`` as true."""
    rule = {_INT: (_DECIMAL_INT,), _FLOAT: (_DECIMAL_INT, _DECIMAL_FLOAT), _BOOL: (_BOOLEAN,)}.get(event.tag or "")
    return rule is not None and not any(pattern.match(event.value) for pattern in rule)


for _first in "-0123456789":
    NoAliasLoader.add_implicit_resolver(_INT, _DECIMAL_INT, [_first])
    NoAliasLoader.add_implicit_resolver(_FLOAT, _DECIMAL_FLOAT, [_first])
NoAliasLoader.add_implicit_resolver(_BOOL, _BOOLEAN, list("tTfF"))
NoAliasLoader.add_implicit_resolver(_NULL, _NULLS, ["~", "n", "N", ""])


def _yaml12_number(value: str) -> int | float | None:
    """What YAML 1.2's core schema reads a plain scalar as, when a number."""
    if not _CORE_12.match(value):
        return None
    if value[:2] in ("0o", "0x"):
        return int(value[2:], 8 if value[1] == "o" else 16)
    if value.lstrip("+-")[1:].lower() in ("inf", "nan"):  # .inf, -.Inf, .NaN
        return float(value.replace(".", "", 1))
    return int(value) if re.match(r"^[-+]?[0-9]+$", value) else float(value)


def _ambiguous_message(exc: _AmbiguousScalar, noun: str) -> str:
    """What the value means where, and what to write instead, in one line."""
    where = f"line {exc.line}" + (f", {exc.key}" if exc.key else "")
    if _yaml11_tag(exc.value) == _BOOL:
        return (
            f"{where}: {exc.value} is a boolean in YAML 1.1 and text in YAML 1.2; "
            f"write true or false, or quote it ('{exc.value}') for text; fix the {noun}"
        )
    old = yaml.load(exc.value, Loader=yaml.SafeLoader) if _yaml11_tag(exc.value) else None
    new = _yaml12_number(exc.value)
    if old is not None and new is not None and repr(old) == repr(new):
        readings = f"YAML 1.1 and 1.2 read it as {old!r}"
    else:
        readings = ", ".join(f"YAML {version} reads it as {n!r}" for version, n in (("1.1", old), ("1.2", new)) if n is not None)
    finite = [n for n in (old, new) if n is not None and math.isfinite(n)]
    meant = " or ".join(sorted({str(int(n)) if n == int(n) else repr(n) for n in finite})) or "a finite number"
    return (
        f"{where}: {exc.value} is not a plain decimal number ({readings}); write the number meant in decimal "
        f"digits ({meant}), or quote it ('{exc.value}') for text; fix the {noun}"
    )


class Dumper(yaml.SafeDumper):
    """SafeDumper for files :func:`read_yaml` reads back: quotes every string that YAML 1.1 or 1.2 would
    read as a number or boolean (``'0o10'``, ``'1e3'`` too), and never writes anchors."""

    def ignore_aliases(self, data: object) -> bool:
        return True


Dumper.add_implicit_resolver(_INT, _CORE_12, list("-+0123456789."))


def read_yaml(path: Path, noun: str, fix: str) -> object:
    """The document in ``path``; every problem is one InputError naming the file, what it should be
    (``noun``: ``baseline``) and ``fix``, the way out (``re-create it with `guarddiag baseline```).
    FileNotFoundError is left to the caller, who knows what a missing file means."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=NoAliasLoader)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {noun} ({exc.strerror}); give a {noun} file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); {fix}") from None
    except _AliasRefused as exc:
        raise InputError(
            f"{path}: line {exc.line}: YAML anchors and aliases (&, *) are not allowed in a {noun} (guarddiag writes none); {fix}"
        ) from None
    except _AmbiguousScalar as exc:
        raise InputError(f"{path}: {_ambiguous_message(exc, noun)}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]}); {fix}") from None
    except (ValueError, OverflowError) as exc:  # a value YAML reads but Python cannot hold (a 5000-digit number, 2024-13-45)
        raise InputError(f"{path}: not a guarddiag {noun} ({str(exc).split(';')[0]}); {fix}") from None
    except RecursionError:
        raise InputError(f"{path}: not a guarddiag {noun} (nested too deeply); {fix}") from None
