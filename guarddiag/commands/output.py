"""Where every command writes text: a report on stdout, a message on stderr, each escaped for a
terminal and a CI log on the way out (render.escape), whatever renderer made it."""

from __future__ import annotations

import sys

import typer

from guarddiag.render.escape import one_line, terminal


def echo(text: str) -> None:
    """A report or a result on stdout: controls shown visibly, no line the GitHub runner acts on.
    guarddiag's own annotations are the one exception: :func:`echo_annotations`."""
    typer.echo(terminal(text))


def echo_annotations(lines: str, err: bool) -> None:
    """guarddiag's own workflow commands (render_annotations escaped their values), on stdout or ``err``."""
    typer.echo(lines, err=err)


def message(text: str) -> None:
    """One line on stderr (an error, a warning, progress): every control and line break shown visibly."""
    print(one_line(text), file=sys.stderr, flush=True)
