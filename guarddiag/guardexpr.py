"""The one reader of guard expressions: how torch spells the object a guard checks, and how
guarddiag spells it back (readably, or stable across processes).

torch names objects by *source*: ``L['m']`` (a local), ``G['cfg']`` (a global),
``L['m']._modules['lin']._parameters['weight']``, ``___odict_getitem(L['self']._modules, 'lin')``.
Listings (and failure texts before torch 2.6) print sources that way; failure texts of torch >= 2.6
print locals bare: ``m.layer_idx``. Pure functions over strings.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import NamedTuple

# A source as guard expressions print it, for use inside larger patterns: wrap it in a named group
# with :func:`source_group`. Lazy: the pattern around it says where it ends.
SOURCE = r"(?:___odict_getitem\()?[LG]\[.+?"
# How a source by name starts: a local or a global, ``L['`` or ``G['``.
SOURCE_ROOT = r"[LG]\['"

# The rewrites from torch's spelling to the user's. The root rewrite comes in two forms: a source
# starts with its root; an expression holds roots anywhere (never inside a longer name or subscript).
_ODICT = (re.compile(r"___odict_getitem\((.+?), '([^']*)'\)"), r"\1['\2']")
_LEADING_ROOT = (re.compile(rf"^{SOURCE_ROOT}([^']*)'\]"), r"\1")
_ANY_ROOT = (re.compile(rf"(?<![\w.\]]){SOURCE_ROOT}([^']*)'\]"), r"\1")
_MEMBERS = (
    (re.compile(r"\._(?:modules|parameters|buffers)\['([^']*)'\]"), r".\1"),
    (re.compile(r"\.__dict__"), ""),
    (re.compile(r"\.__closure__\[\d+\]\.cell_contents"), "<closure>"),
)
_SOURCE_REWRITES = (_ODICT, _LEADING_ROOT, *_MEMBERS)
_EXPR_REWRITES = (_ODICT, _ANY_ROOT, *_MEMBERS)

# The object a listed guard checks: the first source in its expression, up to a space, comma or parenthesis.
_LISTED_SOURCE = re.compile(rf"((?:___odict_getitem\()?{SOURCE_ROOT}[^']*'\][^\s,()]*)")
# The object a failure text names: a source with its attributes and subscripts, without the
# ``.size()`` a shape relation calls on it.
_NAMED_SOURCE = re.compile(rf"{SOURCE_ROOT}[^']*'\](?:\.(?!size\(|stride\(|storage_offset\()\w+|\[[^\]]*\])*")
# torch >= 2.6 prints locals bare in failure texts: ``2 <= x.size()[0]``.
_BARE_SIZED = re.compile(r"\b([A-Za-z_]\w*(?:\.\w+)*)\.(?:size|stride|storage_offset)\(")
_BARE_ROOT = re.compile(r"^([A-Za-z_]\w*)")
# A resume function's stack slot (``___stack0``): a local, though spelled like torch's guard helpers.
_STACK_SLOT = re.compile(r"^___stack\d+\b")

# What normalize_guard puts in place of an object id or address.
ID_MARK = "<id>"
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b|(?<![\d.])\d{7,}\b")
_EXPECTED = re.compile(r"expected [^,]+, actual .+$|expected [^,]+$")


def source_group(name: str = "src") -> str:
    """:data:`SOURCE` as a named group, for a pattern that captures the guarded object."""
    return f"(?P<{name}>{SOURCE})"


def _rewrite(text: str, rewrites: tuple[tuple[re.Pattern[str], str], ...]) -> str:
    for pattern, repl in rewrites:
        text = pattern.sub(repl, text)
    return text


# Every cause names its object: a log of thousands of compiles or ranks names the same few, rewritten once each.
@functools.lru_cache(maxsize=4096)
def readable_source(src: str) -> str:
    """``L['m']._modules['lin']._parameters['weight']`` -> ``m.lin.weight``."""
    return _rewrite(src.strip(), _SOURCE_REWRITES)


def readable_expr(text: str) -> str:
    """Every source inside an expression spelled readably: ``len(L['xs']) == 2`` -> ``len(xs) == 2``."""
    return _rewrite(text, _EXPR_REWRITES)


def as_source(text: str) -> str:
    """Failure texts of torch >= 2.6 print ``m.layer_idx`` where listings print ``L['m'].layer_idx``:
    the listing spelling, so that listing patterns apply (also to a whole guard, ``lr == 0.1``)."""
    if text.startswith(("L[", "G[")) or text.startswith("___") and not _STACK_SLOT.match(text):
        return text  # a guard helper (``___check_obj_id(...)``); a resume function's stack slot is a local
    return _BARE_ROOT.sub(r"L['\1']", text, count=1)


def normalize_guard(expr: str) -> str:
    """A form of the guard that is the same across processes: ids and sizes removed."""
    expr = _ADDRESS.sub(ID_MARK, expr)
    return _EXPECTED.sub("expected <v>", expr).strip()


def first_source(expr: str) -> str:
    """The object a listed guard checks when its kind does not say: the first source in the expression."""
    m = _LISTED_SOURCE.search(expr)
    return m.group(1) if m else ""


def named_source(expr: str) -> str:
    """The object a failure text names (``L['x']`` in ``2 <= L['x'].size()[0]``), or ``""``."""
    m = _NAMED_SOURCE.search(expr)
    return m.group(0) if m else ""


def sized_source(expr: str) -> str:
    """The object whose size a shape relation reads, in either spelling: ``L['x']``, or ``x`` (torch >= 2.6)."""
    m = _BARE_SIZED.search(expr)
    return named_source(expr) or (m.group(1) if m else "")


# A tensor check's fields (torch 2.1+): ``check_tensor(L['x'], Tensor, DispatchKeySet(CPU, ...), torch.float32,
# device=None, requires_grad=False, size=[4, 8], stride=[8, 1])``, cut by these separators in this order
# (string cuts, not a regex: a big model's recompiling frame has thousands of tensor checks per compile).
_KEYS = "DispatchKeySet("
_TENSOR_CUTS = ("), ", ", device=", ", requires_grad=", ", size=[", "], stride=[")
# The words for a changed field, in the order they are named.
TENSOR_PROPERTIES = {"dtype": "dtype", "device": "device", "requires_grad": "requires_grad", "keys": "dispatch keys", "stride": "stride"}


def tensor_fields(expr: str) -> dict[str, str] | None:
    """The metadata a tensor check pins, one entry per field and per size dim (``size0``, ``size1``...);
    None when the expression is not a tensor check this reader knows."""
    start = expr.find(_KEYS)
    if start < 0:
        return None
    rest, values = expr[start + len(_KEYS) :], []
    for cut in _TENSOR_CUTS:
        value, found, rest = rest.partition(cut)
        if not found:
            return None
        values.append(value)
    keys, dtype, device, requires_grad, size = values
    fields = {"dtype": dtype, "device": device, "requires_grad": requires_grad, "keys": keys, "stride": rest.rstrip(")]")}
    sizes = [s.strip() for s in size.split(",")] if size.strip() else []
    fields["ndim"] = str(len(sizes))
    fields.update({f"size{i}": s for i, s in enumerate(sizes)})
    return fields


def tensor_change(before: dict[str, str] | None, after: dict[str, str] | None) -> str:
    """What differs between two tensor checks' fields, in words: ``size at dim 0``, ``requires_grad``,
    ``dtype, size at dims 0, 1``; ``""`` when it cannot be told."""
    if before is None or after is None:
        return ""
    named = [words for key, words in TENSOR_PROPERTIES.items() if before.get(key) != after.get(key)]
    dims = [k[4:] for k in after if k.startswith("size") and before.get(k) != after[k]]
    if before.get("ndim") != after.get("ndim"):
        size = "number of dims"
    else:
        size = f"size at dim{'s' if len(dims) > 1 else ''} {', '.join(dims)}" if dims else ""
    if size:
        # Another size has other strides: the size says it.
        named = [n for n in named if n != "stride"] + [size]
    return ", ".join(named)


# A size term of a symbolic-shape guard, in either spelling: ``L['x'].size()[1]`` (listings, failure texts
# before torch 2.6) or ``x.size()[1]`` (failure texts of torch >= 2.6); a stride and a storage offset alike.
SIZE_TERM = re.compile(
    r"(?P<src>(?:___odict_getitem\()?(?:[LG]\['[^']*'\]|[A-Za-z_]\w*)(?:\.\w+|\[[^\]]*\]|, '[^']*'\))*?)"
    r"\.(?P<what>size|stride|storage_offset)\(\)(?:\[(?P<dim>\d+)\])?"
)
# A symbol of torch's shape environment (``s0``, ``u1``: backed and unbacked sizes), where a guard names no source.
SIZE_SYMBOL = re.compile(r"\b[su]\d+\b")
# sympy's spelling (torch <= 2.2 prints guards through sympy's StrPrinter): ``Eq(a, b)``, ``Ne(a, b)``, ``Mod(a, b)``.
_SYMPY_CALLS = {"Eq": "{} == {}", "Ne": "{} != {}", "Mod": "({} % {})"}
_SYMPY_CALL = re.compile(r"\b(Eq|Ne|Mod)\(")
# ``(x.size(1) % 8) == 0``: the parentheses around a remainder compared with something change nothing.
_REMAINDER = re.compile(r"^\((?P<rem>[^()]*(?:\([^()]*\)[^()]*)*? % [^()]+)\)(?= [=!]= )")


def _sympy_calls(expr: str) -> str:
    """``Eq(Mod(a, 8), 0)`` -> ``(a % 8) == 0``: sympy's calls in Python's operators, innermost first."""
    for _ in range(32):  # a guard nests a few calls at most
        m = _SYMPY_CALL.search(expr)
        if m is None:
            return expr
        args, depth, start = [], 0, m.end()
        for i in range(m.end(), len(expr)):
            ch = expr[i]
            if ch in "([{":
                depth += 1
            elif ch in ")]}" and depth:
                depth -= 1
            elif ch == ")" or (ch == "," and depth == 0):
                args.append(expr[start:i].strip())
                start = i + 1
                if ch == ")":
                    break
        else:
            return expr  # unbalanced: left as torch printed it
        form = _SYMPY_CALLS[m[1]]
        if len(args) != 2:
            return expr
        expr = expr[: m.start()] + form.format(*args) + expr[i + 1 :]
    return expr


def size_terms(expr: str) -> list[re.Match[str]]:
    """The size, stride and storage-offset terms of a symbolic-shape guard, in order."""
    return list(SIZE_TERM.finditer(expr))


def size_term_text(m: re.Match[str]) -> str:
    """One term in the user's spelling: ``x.size(1)``, ``m.w.stride(0)``, ``x.storage_offset()``."""
    who = readable_source(as_source(m["src"]))
    return f"{who}.{m['what']}({m['dim'] or ''})"


def size_condition(expr: str) -> str:
    """A symbolic-shape guard as the user would write the condition it keeps: ``(L['x'].size()[1] % 8) == 0``
    -> ``x.size(1) % 8 == 0``; ``Eq(L['y'].size()[0], L['x'].size()[1])`` -> ``y.size(0) == x.size(1)``."""
    text = _sympy_calls(" ".join(expr.split()))
    text = SIZE_TERM.sub(size_term_text, text)
    return _REMAINDER.sub(r"\g<rem>", text)


# A dict's keys as a listing pins them: one key at a time (torch >= 2.4: ``list(dict.keys(L['d']))[0] == 'a'``,
# 2.4 ``list(L['d'].keys())[0] == 'a'``), all in order (``list(L['d'].keys()) == ['a', 'b']``,
# ``___key_to_id(L['d']) == ['a', 'b']``) or as a set (torch 2.1: ``set(L['d'].keys()) == {'a', 'b'}``).
_KEY_AT = re.compile(r"^list\((?:dict\.keys\((?P<src>.+?)\)|(?P<src2>.+?)\.keys\(\))\)\[(?P<i>\d+)\] == (?P<key>.+)$")
_KEYS_ALL = re.compile(r"^(?:list\((?P<src>.+?)\.keys\(\)\)|___key_to_id\((?P<src2>.+?)\)) == \[(?P<keys>.*)\]$")
_KEY_SET = re.compile(r"^set\((?P<src>.+?)\.keys\(\)\) == \{(?P<keys>.*)\}$")


class KeyPin(NamedTuple):
    """What one listed guard says of a dict's keys: the dict, and the key at ``index`` or all its keys."""

    source: str
    index: int | None
    keys: tuple[str, ...]
    ordered: bool = True


def key_pin(expr: str) -> KeyPin | None:
    """The dict keys a listed guard pins (see above), None for any other guard."""
    if not expr.startswith(("list(", "___key_to_id(", "set(")):
        return None
    m = _KEY_AT.match(expr)
    if m is not None:
        return KeyPin(m["src"] or m["src2"], int(m["i"]), (m["key"].strip(),))
    m = _KEYS_ALL.match(expr)
    if m is not None:
        return KeyPin(m["src"] or m["src2"], None, _key_list(m["keys"]))
    m = _KEY_SET.match(expr)
    if m is not None:
        return KeyPin(m["src"], None, _key_list(m["keys"]), ordered=False)
    return None


def _key_list(text: str) -> tuple[str, ...]:
    """``'a', 'b, c', 3`` -> ``("'a'", "'b, c'", "3")``: keys as torch prints them, split at top-level commas."""
    keys, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            keys.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return tuple(keys + [last] if last else keys)


_RELATION = re.compile(r"^(?P<a>[^=!<>]+?) (?P<op>==|!=) (?P<b>[^=!<>]+)$")


def condition_key(condition: str) -> tuple[str, ...]:
    """A condition as a key that does not depend on which side torch printed first: ``y.size(0) == x.size(1)``
    and ``x.size(1) == y.size(0)`` are one guard."""
    m = _RELATION.match(condition)
    return (m["op"], *sorted((m["a"].strip(), m["b"].strip()))) if m else (condition,)


# A symbol of torch's shape environment in a guard it added: a size (s27), an unbacked size (u0), a float (zf20).
_SYMBOL = re.compile(r"\b[a-z]{1,2}\d+\b")


def symbolic_condition(expr: str, symbols: dict[str, str]) -> str:
    """A guard the shape environment added over its symbols (``Eq(s27, s23)``), as the condition of the listed
    guard it became (``x.size(1) == bias.size(0)``), ``symbols`` naming each symbol's source."""
    return size_condition(_SYMBOL.sub(lambda m: symbols.get(m[0], m[0]), expr))


# The operators a symbolic-shape guard is written with that size_guard_holds evaluates; anything else is not known.
_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
# A guard longer than this is not evaluated (a model's guard over thousands of sizes): not known.
_MAX_GUARD_CHARS = 2000


def size_guard_holds(expr: str, sizes: dict[str, int]) -> bool | None:
    """Whether a symbolic-shape guard as a listing prints it (``(L['x'].size()[1] % 16) == 0``) holds for the
    sizes a call had (``{"L['x'].size()[1]": 80}``, by the source torch names each size by); None where it
    cannot be told: a term whose size is not given (a stride, another tensor), a function torch prints
    (``Max``), a division by zero. Integer arithmetic and comparisons only, read with ``ast``, never run."""
    if len(expr) > _MAX_GUARD_CHARS:
        return None
    missing = False

    def value(m: re.Match[str]) -> str:
        nonlocal missing
        found = sizes.get(m[0])
        missing = missing or found is None
        return str(found)

    text = SIZE_TERM.sub(value, _sympy_calls(" ".join(expr.split())))
    if missing:
        return None
    try:
        result = _evaluate(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return None
    return result if isinstance(result, bool) else None


def _evaluate(node: ast.AST) -> int | bool:
    if isinstance(node, ast.Constant) and type(node.value) in (int, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        operand = _evaluate(node.operand)
        return -operand if isinstance(node.op, ast.USub) else not operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _evaluate(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise ValueError("not a size guard's arithmetic")
