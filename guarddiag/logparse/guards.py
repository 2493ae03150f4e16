"""Guard listings: the ``TREE_GUARD_MANAGER`` tree (torch >= 2.3) and the older flat lists."""

from __future__ import annotations

import re

from guarddiag.guardexpr import first_source
from guarddiag.guardkinds import flat_kind
from guarddiag.model import Guard

# ``file:line in function``, found by its line number and widened to the left in linear time
# (``[^\s#]+:\d+ in ...`` backtracked over every start of a long token: 91 s on an 80 KB comment).
_LINE_IN = re.compile(r":\d+ in [\w<>.]+")

def split_comment(text: str) -> tuple[str, str]:
    """Split ``expr  # user code  # file:line in fn`` into the expression and its location."""
    cut = text.find("  # ")  # torch pads the expression: the usual case needs no regex
    if cut >= 0:
        return text[:cut].strip(), _location(text[cut + 4 :])
    hash_at = _comment_hash(text)
    if hash_at < 0:
        return text.strip(), ""
    return text[:hash_at].strip(), _location(text[hash_at + 2 :])


def guard_expr(text: str) -> str:
    """The expression of ``expr  # comment``, as :func:`split_comment` gives it, without reading the location."""
    cut = text.find("  # ")
    if cut < 0:
        cut = _comment_hash(text)
    return (text[:cut] if cut >= 0 else text).strip()


def _comment_hash(text: str) -> int:
    """Index of the first ``#`` with white space on both sides (``\\s+#\\s``), or -1; linear in the text."""
    at = text.find("#", 1)
    while at >= 0:
        if text[at - 1].isspace() and at + 1 < len(text) and text[at + 1].isspace():
            return at
        at = text.find("#", at + 1)
    return -1


def _location(comment: str) -> str:
    # Cheap path for torch's usual `code  # file:line in fn (HINT: ...)`; the regex for the rest.
    tail = comment[comment.rfind("# ") + 2 :] if "# " in comment else comment
    cut = tail.find(" (")
    if cut > 0:
        tail = tail[:cut]
    if " in " in tail and ":" in tail and " " not in tail.partition(" in ")[2].strip():
        return tail.strip()
    found = None
    for found in _LINE_IN.finditer(comment):  # noqa: B007 - the last one is wanted
        pass
    if found is None:
        return ""
    start = found.start()
    while start > 0 and not comment[start - 1].isspace() and comment[start - 1] != "#":
        start -= 1
    return comment[start : found.end()] if start < found.start() else ""


def guard_from_raw(kind: str, rest: str) -> Guard:
    """A counting parser's tree guard: kind, object, expression, and its comment unread (no manager
    path; :func:`location_of` reads the comment where a location is wanted)."""
    cut = rest.find("  # ")
    if cut < 0:
        return Guard(kind, first_source(rest.strip()), rest.strip())
    expr = rest[:cut].strip()
    return Guard(kind, first_source(expr), expr, comment=rest[cut + 4 :])


def location_of(comment: str) -> str:
    """``user code  # file:line in fn (HINT: ...)`` -> ``file:line in fn``; a location given as is."""
    return _location(comment)


def flat_guard(text: str) -> Guard:
    """A guard from a flat listing line: its kind is read off the expression's shape (guardkinds' table)."""
    expr, location = split_comment(text)
    kind, m = flat_kind(expr)
    src = (m.groupdict().get("src") if m is not None else None) or first_source(expr)
    return Guard(kind, src.strip(), expr, location)


# Leaves deeper than this are tallied at this depth (torch's trees of real models are a few dozen deep).
TALLY_DEPTH = 256


class GuardOwners:
    """A tree listing's leaf guards counted by the source of the manager each sits under (where the guards
    of a cache entry come from), from each tree line's depth and label as the parsers' hot paths cut them.
    Every leaf counts, whether or not a counting parse keeps it.

    The hot paths count a leaf with one list increment, ``tally[depth] += 1`` (a leaf's label is upper case,
    ``TENSOR_MATCH``), and call :meth:`manager` only for the fewer manager lines: the leaves tallied at a
    depth belong to the manager open one level up, and are added to its source when it ends."""

    __slots__ = ("_sources", "counts", "tally")

    DEPTH = TALLY_DEPTH

    def __init__(self) -> None:
        self._sources: list[str] = []
        self.counts: dict[str, int] = {}
        self.tally = [0] * (self.DEPTH + 1)

    def line(self, depth: int, label: str, text: str, end: int) -> None:
        """One tree line at ``depth``: ``label`` is ``text`` up to its first colon at ``end`` (the whole line
        without one)."""
        if label.isupper():
            self.tally[min(depth, self.DEPTH)] += 1
        elif "Manager" in label:
            self.manager(depth, text, end)

    def manager(self, depth: int, text: str, end: int) -> None:
        """A manager line at ``depth`` (``GuardManager: source=L['x'], accessed_by=...``): those at its depth
        and deeper have ended."""
        self._flush(depth + 1)
        sources = self._sources
        del sources[depth:]
        begin = text.find("source=", end) if end > 0 else -1
        stop = text.find(", accessed_by=", begin) if begin >= 0 else -1
        sources.append(text[begin + 7 : stop] if stop > begin else (sources[-1] if sources else ""))

    def _flush(self, depth: int, deepest: int | None = None) -> None:
        """Add the leaves tallied from ``depth`` down to ``deepest`` (one below the open managers by default)
        to the managers above them; a leaf under no open manager (a tree cut or malformed) to the frame."""
        tally, sources, counts = self.tally, self._sources, self.counts
        last = min(len(sources) + 1 if deepest is None else deepest, self.DEPTH)
        for d in range(max(depth, 0), last + 1):
            if tally[d]:
                owner = sources[d - 1] if 0 < d <= len(sources) else ""
                counts[owner] = counts.get(owner, 0) + tally[d]
                tally[d] = 0

    def whole(self) -> tuple[tuple[str, int], ...]:
        self._flush(0, self.DEPTH)
        return tuple(self.counts.items())


class TreeReader:
    """Reads a guard listing line by line, keeping only the path of managers above."""

    def __init__(
        self, keep: frozenset[str] | None = None, locations: bool = True, seen: dict[tuple[str, str], Guard] | None = None
    ) -> None:
        """``locations``: False leaves ``Guard.location`` empty (reading it is a sixth of a full parse);
        ``seen``: the guards of earlier listings by line, shared by a parser's listings: a line read
        before under the same parent object is the same guard."""
        self._sources: list[str] = []
        self.guards: list[Guard] = []
        self.raw: list[tuple[str, str]] = []
        # Counting needs only a few guard kinds, whose expressions name their object; building the
        # others (and the manager path above each guard) is most of the parse time.
        self._keep = keep
        self._locations = locations
        self._seen = seen
        self.owners = GuardOwners()

    def keep_raw(self, label: str, rest: str) -> None:
        """A kept guard's kind and expression (with its comment), read later and only if needed
        (guard_from_raw). LogParser.parse calls this directly for the tree lines it recognizes."""
        if not rest.startswith("GuardManager"):
            self.raw.append((label, rest))

    def feed(self, body: str) -> bool:
        """Take one listing line; False when it is not part of a listing."""
        text = body.strip()
        if not text or text in ("TREE_GUARD_MANAGER:", "GUARDS:"):
            return True
        if text[0] not in "+|":
            guard = flat_guard(text)
            if self._keep is None or guard.kind in self._keep:
                self.guards.append(guard)
            return True
        start = text.find("+- ")
        if start < 0:
            return True  # a wrapped tree line: nothing to keep
        line = text[start + 3 :]
        colon = line.find(":")
        self.owners.line(start // 2, line[:colon] if colon > 0 else line.rstrip(), line, colon)
        self.tree_line(start // 2, line)
        return True

    def tree_line(self, depth: int, text: str) -> None:
        """One line of the tree at ``depth``, ``text`` what follows its ``+- `` (LogParser.parse calls this
        directly for the lines of a listing read whole)."""
        seen = self._seen
        if seen is not None:
            parent = self._sources[depth - 1] if 0 < depth <= len(self._sources) else ""
            guard = seen.get((text, parent))
            if guard is not None:  # a guard line read before under the same object: the same guard
                self.guards.append(guard)
                return
        colon = text.find(":")
        label = text[:colon] if colon > 0 else text
        rest = text[colon + 1 :].lstrip() if colon > 0 else ""
        if "Manager" in label or rest.startswith("GuardManager"):
            if self._keep is not None:
                return  # counting takes sources from the expressions: no manager stack
            del self._sources[depth:]
            begin = rest.find("source=")
            end = rest.find(", accessed_by=", begin)
            if begin >= 0 and end > begin:
                self._sources.append(rest[begin + 7 : end])
            else:
                self._sources.append(self._sources[-1] if self._sources else "")
            return
        if self._keep is not None:
            if label in self._keep:
                self.keep_raw(label, rest)
            return
        if label.endswith("Accessor") or not label.isupper():
            return
        parent = self._sources[depth - 1] if 0 < depth <= len(self._sources) else ""
        if self._locations:
            expr, location = split_comment(rest)
            guard = Guard(label, parent or first_source(expr), expr, location)
        else:
            # The comment kept unread, as a counting parser keeps it: what a wrapper frame compiled is read from it.
            cut = rest.find("  # ")
            expr = guard_expr(rest)
            guard = Guard(label, parent or first_source(expr), expr, comment=rest[cut + 4 :] if cut >= 0 else "")
        if seen is not None:
            seen[(text, parent)] = guard
        self.guards.append(guard)
