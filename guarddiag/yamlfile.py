"""Reading the YAML files users commit (the baseline, ``guarddiag.yaml``): one ladder of errors.

Anchors and aliases are refused: guarddiag writes none, and a few nested aliases expand into
billions of values (a 1 KB "billion laughs" file took minutes and gigabytes).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from guarddiag.errors import InputError


class _AliasRefused(yaml.YAMLError):
    def __init__(self, line: int) -> None:
        super().__init__(f"anchor or alias at line {line}")
        self.line = line


class NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without anchors and aliases."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _AliasRefused(event.start_mark.line + 1)
        return super().compose_node(parent, index)


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
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]}); {fix}") from None
    except (ValueError, OverflowError) as exc:  # a value YAML reads but Python cannot hold (a 5000-digit number, 2024-13-45)
        raise InputError(f"{path}: not a guarddiag {noun} ({str(exc).split(';')[0]}); {fix}") from None
    except RecursionError:
        raise InputError(f"{path}: not a guarddiag {noun} (nested too deeply); {fix}") from None
