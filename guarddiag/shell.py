"""Commands guarddiag tells the user to run, quoted for a POSIX shell so that they survive every output.

A script path or argument is hostile (a record is another job's artifact): a command built from it must
run exactly that command when pasted, after the escaping layer (``render/escape.py``) has shown every
control character visibly and broken every ``##[``. :func:`quote` gives a word in single quotes where the
escaping layer leaves it alone and that holds no backtick (Markdown reports put commands in code spans),
else in ANSI-C quotes (``$'a\\nb.py'``: bash, zsh, ksh and POSIX.1-2024 sh)
with every such character written as an escape, so that the text shown is the command meant. A NUL ends a
word in every shell (no path or argument holds one): callers leave such a word out.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from guarddiag.render.escape import visible

_LEGACY = "##["


def quote(word: str) -> str:
    """``word`` as one shell word that the escaping layer does not change; readably where it can be: a
    config source holds single quotes (``L['x']:0``), so such a word with nothing a shell expands inside
    double quotes is double-quoted (``"compiler.dynamic_sources=L['x']:0"``)."""
    if visible(word) == word and _LEGACY not in word and "`" not in word:
        if "'" in word and not set(word) & set('"$\\!'):
            return f'"{word}"'
        return shlex.quote(word)
    out = []
    for i, ch in enumerate(word):
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "[" and word[max(i - 2, 0) : i] == "##":
            out.append("\\x5b")
        elif ch == "`":
            out.append("\\x60")  # Markdown code spans end at a backtick: the command holds none
        elif visible(ch) == ch:
            out.append(ch)
        else:
            # Its bytes as the file system has them (UTF-8; an undecodable name's own bytes), whatever the locale.
            try:
                out += [f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape")]
            except UnicodeEncodeError:
                out.append(f"\\u{ord(ch):04x}")  # a lone surrogate no file name or argument holds
    return "$'" + "".join(out) + "'"


def join(words: Iterable[str]) -> str:
    """The words as one command line, each :func:`quote`-d."""
    return " ".join(quote(w) for w in words)
