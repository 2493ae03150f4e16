"""Escaping, one function per output medium: every name guarddiag shows comes from a torch log or a run
record (another CI job's artifact, a paste from a public issue) and is hostile until escaped here.

- :func:`visible`: one untrusted value as plain text: control, bidi and invisible format characters
  written as ``\\x1b``, ``\\u202e``, CR and LF as ``\\r``, ``\\n`` (a name never adds a line);
  :func:`visible_values` applies it to every string of a report value, which the renderers take.
- :func:`terminal`: a whole output for a terminal or a CI log: the same, but guarddiag's own newlines
  and tabs kept, and :func:`workflow_safe` on every line; :func:`one_line` for a stderr message.
- :func:`workflow_message`, :func:`workflow_property`: the values of guarddiag's own annotations.
- :func:`markdown_code`, :func:`markdown_text`: Markdown (run and check reports, the step summary).
- :func:`xml`: a JUnit XML value, :func:`xml_document`: the whole document; :func:`html`: HTML.
- :func:`json_text`, :func:`yaml_text`: JSON and YAML keep every value exactly, and still cannot start
  a workflow command. Files get the same as stdout: ``--out /dev/stdout`` writes one there, a CI step
  may ``cat`` it.
"""

from __future__ import annotations

import dataclasses
import html as _html
import re
from typing import TypeVar

T = TypeVar("T")

# What must never reach an output raw: C0 controls, DEL, C1 controls (CSI, OSC and friends), lone
# surrogates and non-characters, and the format characters that reorder or hide text (bidi
# embeddings, overrides and isolates, zero-width spaces and joiners, word joiners, BOM, interlinear
# annotations, language tags) or end a line in some viewers (U+2028, U+2029). Unicode's Cc, Cf, Cs,
# Zl and Zp categories (tests/unit/render/test_escape.py checks the table against unicodedata), plus the
# blank fillers and the combining grapheme joiner, which display as nothing.
_OTHER_UNSAFE = (
    "\x7f-\x9f\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb\ufffe\uffff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
_UNSAFE = re.compile(f"[\x00-\x1f{_OTHER_UNSAFE}]")
# The same, but the newline and tab guarddiag itself writes between lines and cells.
_UNSAFE_IN_OUTPUT = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER_UNSAFE}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _shown(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """One untrusted value as plain text: every control, bidi or invisible character written as its
    escape (``\\x1b``, ``\\u202e``, ``\\n``), so that the value shows what it holds and adds no line."""
    return text if (text.isascii() and text.isprintable()) or _UNSAFE.search(text) is None else _UNSAFE.sub(_shown, text)


def visible_values(value: T) -> T:
    """``value`` (a run, a check result, a diff: frozen dataclasses, tuples, dicts) with :func:`visible`
    applied to every string in it, keys too: what the renderers of every human format take, so that
    no sentence built from it can carry a raw control or line break. Unchanged parts are kept as is."""
    return _visible(value, {})


_ATOMS = frozenset({int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _visible(value: object, memo: dict[int, object]) -> object:
    """A report has tens of strings per recompile: strings and numbers are handled inline, without a call."""
    kind = type(value)
    if kind is str:
        return visible(value)  # type: ignore[arg-type]
    if kind in _ATOMS:
        return value
    key = id(value)
    if key in memo:
        return memo[key]
    out: object = value
    if isinstance(value, (tuple, list, set, frozenset)):
        items = [_item(v, memo) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            # A NamedTuple (FunctionKey) is built from its fields, not from an iterable.
            out = type(value)._make(items) if hasattr(value, "_make") else type(value)(items)
    elif isinstance(value, dict):
        pairs = [(_item(k, memo), _item(v, memo)) for k, v in value.items()]
        if any(k is not k0 or v is not v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            out = dict(pairs)
    elif (names := _fields(kind)) is not None:
        changed = {}
        for name in names:
            old = getattr(value, name)
            new = _item(old, memo)
            if new is not old:
                changed[name] = new
        if changed:
            out = dataclasses.replace(value, **changed)  # type: ignore[type-var]
    memo[key] = out
    return out


def _item(value: object, memo: dict[int, object]) -> object:
    kind = type(value)
    if kind is str:
        return value if value.isascii() and value.isprintable() else visible(value)  # type: ignore[union-attr,arg-type]
    return value if kind in _ATOMS else _visible(value, memo)


def _fields(kind: type) -> tuple[str, ...] | None:
    """The fields a dataclass is built from (None for any other type), looked up once per type."""
    if kind not in _FIELDS:
        _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.init) if dataclasses.is_dataclass(kind) else None
    return _FIELDS[kind]


# The GitHub runner acts on a line that starts (after whitespace) with `::`, and on `##[` anywhere in it
# (its legacy parser): neither may come from a value, in any output guarddiag writes.
_LEGACY = "##["
_LINE_COMMAND = re.compile(r"^(\s*)::", re.M)


def workflow_safe(text: str) -> str:
    """``text`` that the GitHub runner reads as no workflow command: a line that would start with ``::``
    gets a ``\\`` before it, ``##[`` is written ``##\\[``; guarddiag's own annotations do not pass here."""
    if "::" in text:
        text = _LINE_COMMAND.sub(r"\1\\::", text)
    return text.replace(_LEGACY, "##\\[")


def terminal(text: str) -> str:
    """A whole output for a terminal or a CI log (stdout, the step summary): controls shown as in
    :func:`visible` but guarddiag's own newlines and tabs kept, then :func:`workflow_safe`. A second
    guard behind :func:`visible_values`; it cannot tell a value's newline from guarddiag's."""
    if _UNSAFE_IN_OUTPUT.search(text) is not None:
        text = _UNSAFE_IN_OUTPUT.sub(_shown, text)
    return workflow_safe(text)


def one_line(message: str) -> str:
    """A message for stderr (an error, a warning, progress): one line, every control shown, no workflow command."""
    return workflow_safe(visible(message))


def workflow_message(text: str) -> str:
    """The message of guarddiag's own annotation (``::error ...::MESSAGE``): controls shown, ``##[``
    neutralized, then %, CR and LF encoded as the workflow-command rules say (guarddiag's own line breaks)."""
    text = _UNSAFE_IN_OUTPUT.sub(_shown, text).replace("\t", "\\t").replace(_LEGACY, "##\\[")
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value of an annotation (``file=``, ``title=``): as a message, and ``:`` and ``,`` encoded."""
    return workflow_message(visible(text)).replace(":", "%3A").replace(",", "%2C")


def markdown_code(value: str, table: bool = False) -> str:
    """``value`` as one Markdown code span: a fence longer than any backtick run inside (CommonMark),
    padded when the value starts or ends with a backtick; in a ``table`` cell ``|`` as ``\\|`` (GFM)."""
    # A code span never starts a line: of the workflow commands only `##[` can act inside one.
    value = visible(value).replace(_LEGACY, "##\\[")
    if table:
        value = value.replace("|", "\\|")
    if not value:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall("`+", value)), default=0) + 1)
    pad = " " if value[0] == "`" or value[-1] == "`" or (value[0] == " " and value[-1] == " ") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


# Outside code spans: what starts emphasis, strike-through, math, a link or image, a table cell or a code
# span, wherever it stands; `_` only where it can (an `_` between letters or digits never does, CommonMark's
# flanking rule); `#` and `>` at the start (a heading, a quote); `&` and `<` as entities (HTML, entities).
_MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]|~$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|^[#>]")


# GFM's autolinks need no markup at all: `scheme://`, `www.`, `mailto:`/`xmpp:` and `name@host` become
# links in prose. A backslash before the `:`, `.` or `@` they hang on breaks each and still shows the text.
_AUTOLINK = re.compile(r":(?=/)|(?i:(?<=www)\.|(?<=mailto):|(?<=xmpp):)|@")


def _prose(text: str) -> str:
    # `[` is escaped with the rest: no `##[` is left for the runner either.
    text = visible(text).replace("&", "&amp;").replace("<", "&lt;")
    return _AUTOLINK.sub(_backslashed, _MARKDOWN_SPECIAL.sub(_backslashed, text))


def _backslashed(m: re.Match[str]) -> str:
    return "\\" + m.group()


def markdown_text(text: str, table: bool = False) -> str:
    """A sentence in Markdown: guarddiag writes code in backticks (``value of `x` ``), so the parts
    between pairs of backticks become code spans (:func:`markdown_code`) and the rest is escaped text;
    a sentence with an odd number of backticks (a name that holds one) is escaped text throughout."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return _prose(text)
    return "".join(markdown_code(p, table) if i % 2 else _prose(p) for i, p in enumerate(parts))


def xml(text: str, lines: bool = False) -> str:
    """A value for JUnit XML (ElementTree escapes the markup): every control shown as in :func:`visible`;
    with ``lines``, guarddiag's own newlines and tabs kept (a failure's text)."""
    return _UNSAFE_IN_OUTPUT.sub(_shown, text) if lines else visible(text)


def xml_document(text: str) -> str:
    """A serialized XML document that the runner reads as no workflow command, value for value the same:
    ``[`` after ``##`` and the first ``:`` of a line that would start with ``::`` as character references
    (guarddiag's own markup holds neither; values are attributes or text, where a reference is the character)."""
    return _LINE_COMMAND.sub(r"\1&#58;", text).replace(_LEGACY, "##&#91;")


def html(text: str) -> str:
    """A value for HTML: markup escaped (quotes too, for attributes), every control shown as in :func:`visible`."""
    return _html.escape(visible(text), quote=True)


def json_text(text: str) -> str:
    """JSON as ``json.dumps`` writes it (ASCII, no raw control), with ``[`` after ``##`` written ``\\u005b``:
    the value reads back exactly and the runner sees no ``##[``; ``##`` is only ever inside a string."""
    return text.replace(_LEGACY, "##\\u005b")


def yaml_text(data: object, dumper: type | None = None) -> str:
    """``data`` as YAML that reads back exactly and starts no workflow command: every string that holds
    more than plain printable ASCII, ``::`` or ``#`` is double-quoted, where ``##[`` is written ``##\\x5b``
    and a folded line that would start with ``::`` starts ``\\x3a:``. ``dumper``: a SafeDumper to extend."""
    import yaml  # deferred: only the yaml format needs it

    class _Dumper(dumper or yaml.SafeDumper):  # type: ignore[misc,valid-type]
        pass

    def string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        risky = not _PLAIN.fullmatch(value) or "::" in value or "#" in value
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if risky else None)

    _Dumper.add_representer(str, string)
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=False)
    # Both only occur inside double-quoted scalars (every string holding them is one), where \xNN is an escape.
    return _LINE_COMMAND.sub(r"\1\\x3a:", text).replace(_LEGACY, "##\\x5b")


_PLAIN = re.compile(r"[\x20-\x7e]*")
