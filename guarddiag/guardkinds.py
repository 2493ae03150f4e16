"""THE table of guard kinds: how torch spells each kind of guard, and what guarddiag makes of it.

Each row says, for one kind (torch's name: ``ID_MATCH``, ``TENSOR_MATCH``...): its cause category;
how a flat guard listing (torch < 2.3, which prints no kind) spells its expression; how torch's
failure texts spell it (``Recompiling function ... triggered by ...``, every torch version);
whether its expression pins one value (a change of it between two compiles names an unannounced
recompile's cause); the ambient state it checks; and which fix hint answers it.

Rows are tried in table order (flat listings and failure texts alike): the first pattern that
matches decides. Adding a cause category is a :class:`Category` member plus the rows that produce
it; a new torch spelling is one more pattern in its row.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import Enum


class Category(str, Enum):
    """The cause taxonomy: every cause gets exactly one (docs/record-schema.md explains each).
    The values are what run records store."""

    IDENTITY = "identity"
    TYPE = "type"
    VALUE = "value"
    CONTAINER = "container"
    TENSOR = "tensor"
    DYNAMIC_SHAPE = "dynamic_shape"
    GLOBAL_STATE = "global_state"
    ALIASING = "aliasing"
    OTHER = "other"

    def __str__(self) -> str:
        return self.value

    # Equal to its value as a dict key too: records and baselines count causes under plain strings.
    __hash__ = str.__hash__


# Each category in a line (docs/record-schema.md says more). A new category is a member above and a line here.
DESCRIPTIONS: dict[Category, str] = {
    Category.IDENTITY: "object identity: the compiled code was specialized on id() of an object",
    Category.TYPE: "type: an object now has another type",
    Category.VALUE: "value: a constant baked into the graph (int, bool, float, str) changed",
    Category.CONTAINER: "container content: dict keys, lengths, or a dict's version changed",
    Category.TENSOR: "tensor metadata: size, stride, dtype, device or requires_grad changed",
    Category.DYNAMIC_SHAPE: "dynamic-shape relation: a symbolic size guard no longer holds",
    Category.GLOBAL_STATE: "global state: grad mode, autocast, default device, torch function mode",
    Category.ALIASING: "aliasing: inputs that were one object are now distinct, or the other way round",
    Category.OTHER: "other: a guard guarddiag does not classify further",
}


def category(value: str) -> Category:
    """The category named ``value``; a ValueError naming the known ones for anything else."""
    try:
        return Category(value)
    except ValueError:
        known = ", ".join(c.value for c in Category)
        raise ValueError(f"cause category {value!r} is not one of {known}") from None


@dataclass(frozen=True)
class AmbientState:
    """One piece of global state guards check: its name, how texts spell it, and how torch < 2.2
    guarded it alone (``___is_grad_enabled()``) where torch >= 2.2 checks it in ``GLOBAL_STATE``
    and reports the ``field`` that changed (``GLOBAL_STATE changed: grad_mode``)."""

    name: str
    spelling: re.Pattern[str]
    field: str = ""
    flat_call: str = ""


# In order: the first that a text mentions names the state.
AMBIENT_STATES: tuple[AmbientState, ...] = (
    AmbientState("grad mode", re.compile(r"___is_grad_enabled|grad_mode"), "grad_mode", "___is_grad_enabled"),
    AmbientState("default device", re.compile(r"utils_device\.CURRENT_DEVICE|default device")),
    AmbientState("autocast state", re.compile(r"autocast")),
    AmbientState(
        "deterministic algorithms",
        re.compile(r"deterministic"),
        "deterministic_algorithms",
        "___are_deterministic_algorithms_enabled",
    ),
    AmbientState(
        "torch function mode",
        re.compile(r"torch_function_mode|___is_torch_function_enabled|torch_function"),
        "torch_function",
        "___is_torch_function_enabled",
    ),
    AmbientState("global torch state", re.compile(r"___check_global_state"), flat_call="___check_global_state"),
)
_STATE = {s.name: s for s in AMBIENT_STATES}


@dataclass(frozen=True)
class GuardKind:
    """One row of the table.

    ``flat``: patterns of the expression in a flat listing (torch < 2.3), searched; a ``src`` group
    names the guarded object. ``failure``: patterns of a failure text, searched; groups ``src`` (the
    object) and ``what`` (the property that changed); render/words.py says a cause of
    each kind in words. ``ambient``: the state
    the kind checks (guard model of explain). ``hint``: the family of fix hints that answers it ("": none):
    :data:`guarddiag.explain.hints.RULES` holds each family's rules, tried in order (docs/hints.md)."""

    name: str
    category: Category
    flat: tuple[re.Pattern[str], ...] = ()
    failure: tuple[re.Pattern[str], ...] = ()
    pins: bool = False
    ambient: str = ""
    hint: str = ""


def _p(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


def _states(*names: str) -> tuple[re.Pattern[str], ...]:
    return tuple(_STATE[n].spelling for n in names)


_ID, _TYPE, _VALUE, _CONTAINER = Category.IDENTITY, Category.TYPE, Category.VALUE, Category.CONTAINER
_TENSOR, _SHAPE, _GLOBAL, _OTHER = Category.TENSOR, Category.DYNAMIC_SHAPE, Category.GLOBAL_STATE, Category.OTHER
_ALIASING = Category.ALIASING
# Pieces of failure texts, also for the paste reader's looser test of a text shown alone.
GUARD_HELPER = "___check_"  # torch's guard helpers: ___check_obj_id, ___check_type_id, ___check_tensors, ...
TENSOR_FAILURE_START = "tensor '"  # "tensor 'x' size mismatch at index 0. expected 3, actual 4"
MISMATCH = "mismatch"
EQUALITY_OPS = "==|!=|is not|is"
_FLAT_STATE_CALLS = "|".join(s.flat_call.removeprefix("___") for s in AMBIENT_STATES if s.flat_call)

KINDS: tuple[GuardKind, ...] = (
    GuardKind(
        "TENSOR_MATCH",
        _TENSOR,
        flat=_p(r"^(?:check_tensor|___check_tensors)\((?P<src>[^,]+)"),
        failure=_p(
            rf"^{TENSOR_FAILURE_START}(?P<src>.+?)' "
            r"(?P<what>size|stride|dtype|device|requires_grad|dispatch key set|rank|storage offset|layout)"
            rf"[ \w]*{MISMATCH}(?: at index (?P<dim>\d+))?"
            # The sizes before and after (``expected 32, actual 1``): a fix hint tells a size of 0 or 1 by them.
            r"(?:\. expected (?P<expected>\d+), actual (?P<actual>\d+))?"
        ),
        pins=True,
        hint="tensor",
    ),
    GuardKind(
        "ID_MATCH",
        _ID,
        flat=_p(r"^___check_obj_id\((?P<src>.+?), \d+\)"),
        failure=_p(
            r"^(?:ID_MATCH: )?___check_obj_id\((?P<src>.+?), \d+\)",
            # A wrapper's callable (torch's `inner` compiled for a function, now given a module): its code is checked first.
            r"^CodeGuardAccessor: Not a function on (?P<src>.+?)\.__code__",
        ),
        pins=True,
        hint="identity",
    ),
    GuardKind("NOT_NONE_MATCH", _ID, hint="identity"),
    GuardKind(
        "TYPE_MATCH",
        _TYPE,
        flat=_p(r"^___check_type_id\((?P<src>.+?), \d+\)"),
        failure=_p(r"^(?:TYPE_MATCH: )?___check_type_id\((?P<src>.+?), \d+\)"),
        pins=True,
    ),
    GuardKind(
        "DICT_VERSION",
        _CONTAINER,
        flat=_p(r"^___dict_version\((?P<src>.+?)\)"),
        failure=_p(r"^(?:not )?___dict_version\((?P<src>.+?)\)"),
        hint="container",
    ),
    GuardKind(
        "DICT_KEYS",
        _CONTAINER,
        flat=_p(r"^(?:list|set)\((?P<src>.+?)\.keys\(\)\) ==", r"^___key_to_id\((?P<src>.+?)\) =="),
        failure=_p(
            r"^(?:not )?(?:list|set)\((?P<src>.+?)\.keys\(\)\)",
            r"^(?:not )?___key_to_id\((?P<src>.+?)\)",
            # torch >= 2.6 checks keys one by one: `list(dict.keys(weights))[0] == 'a'`.
            r"^list\(dict\.keys\((?P<src>.+?)\)\)\[\d+\] ==",
        ),
        pins=True,
        hint="container",
    ),
    GuardKind("DICT_KEYS_MATCH", _CONTAINER, pins=True, hint="container"),
    GuardKind(
        "DICT_CONTAINS",
        _CONTAINER,
        flat=_p(r"^(?:not )?___dict_contains\([^,]+, (?P<src>.+?)\)"),
        failure=_p(r"^(?:not )?___dict_contains\([^,]+, (?P<src>.+?)\)"),
        hint="container",
    ),
    GuardKind(
        "LENGTH_CHECK",
        _CONTAINER,
        flat=_p(r"^len\((?P<src>.+?)\) =="),
        failure=_p(
            r"^(?:not )?len\((?P<src>.+?)\) *(?:==|!=)",
            # An empty container is checked by its truth value (listed as LENGTH_CHECK: `not L['args']`).
            r"^not (?P<src>(?:[LG]\['[^']*'\]|[A-Za-z_]\w*)(?:\.\w+|\[[^\]]*\])*)$",
        ),
        pins=True,
        hint="container",
    ),
    GuardKind("DICT_LENGTH", _CONTAINER, pins=True, hint="container"),
    GuardKind("SEQUENCE_LENGTH", _CONTAINER, pins=True, hint="container"),
    GuardKind(
        "TUPLE_ITERATOR_LEN",
        _CONTAINER,
        flat=_p(r"^___tuple_iterator_len\((?P<src>.+?)\) =="),
        failure=_p(r"^(?:not )?___tuple_iterator_len\((?P<src>.+?)\)"),
        pins=True,
        hint="container",
    ),
    # Flat listings print grad mode, deterministic algorithms and torch function state each as a
    # call of its own (AMBIENT_STATES.flat_call); they are all this one kind.
    GuardKind(
        "GLOBAL_STATE",
        _GLOBAL,
        flat=_p(rf"^(?:not )?___(?:{_FLAT_STATE_CALLS})\("),
        failure=(
            re.compile(r"^GLOBAL_STATE changed: (?P<what>.*)$"),
            *_states("grad mode", "autocast state", "deterministic algorithms", "global torch state"),
        ),
        pins=True,
        ambient="global torch state",
        hint="global_state",
    ),
    GuardKind(
        "DEFAULT_DEVICE",
        _GLOBAL,
        flat=_p(r"^utils_device\.CURRENT_DEVICE"),
        failure=_states("default device"),
        pins=True,
        ambient="default device",
        hint="global_state",
    ),
    GuardKind(
        "TORCH_FUNCTION_MODE_STACK",
        _GLOBAL,
        flat=_p(r"^___check_torch_function_mode_stack\("),
        failure=_states("torch function mode"),
        ambient="torch function mode",
        hint="global_state",
    ),
    GuardKind("TORCH_FUNCTION_STATE", _GLOBAL, ambient="torch function mode", hint="global_state"),
    GuardKind("GRAD_MODE", _GLOBAL, ambient="grad mode", hint="global_state"),
    GuardKind(
        "BACKEND_MATCH",
        _OTHER,
        flat=_p(r"^___check_current_backend\("),
        failure=_p(r"___check_current_backend"),
        ambient="compiler backend",
    ),
    # One tensor passed twice (or two views of one storage) where the entry saw distinct tensors.
    GuardKind(
        "NO_TENSOR_ALIASING",
        _ALIASING,
        failure=_p(r"^Duplicate tensors found:\s*(?P<src>.*)$", r"^(?:___)?check_no_aliasing\((?P<src>.*)\)$"),
        ambient="no aliasing between tensor inputs",
        hint="aliasing",
    ),
    # torch < 2.4 lists the dynamic-dimension marking as DYNAMIC_INDICES, 2.4 as NO_HASATTR, later
    # torch as DIMENSION_DYNAMIC_MARKING_GUARD; all three print the same expression.
    GuardKind(
        "DYNAMIC_INDICES",
        _TENSOR,
        flat=_p(r"^hasattr\((?P<src>.+?), '_dynamo_\w+'\)"),
        failure=_p(r"^hasattr\((?P<src>.+?), '_dynamo_\w+'\)"),
    ),
    GuardKind("NO_HASATTR", _TENSOR),
    GuardKind("DIMENSION_DYNAMIC_MARKING_GUARD", _TENSOR),
    GuardKind(
        "SHAPE_ENV",
        _SHAPE,
        flat=_p(r"(?:\.size\(\)|\.stride\(\)|\.storage_offset\(\)|\bEq\(|\bNe\()"),
        # A relation (a comparison) over sizes or size symbols (s0, u1).
        failure=_p(
            r"^(?=.*?(?:\.size\(\)|\.stride\(\)|\.storage_offset\(\)|\bEq\(|\bNe\(|\b[su]\d+\b))(?=.*?(?:[<>]|==|!=))"
        ),
        hint="dynamic_shape",
    ),
    # Two sources that were one object (`feats[1] is feats[2]`), or that now are: an `is` between two
    # objects, never a constant (`x is None` is EQUALS_MATCH's).
    GuardKind(
        "OBJECT_ALIASING",
        _ALIASING,
        failure=_p(
            r"^(?P<src>(?:[LG]\['[^']*'\]|[A-Za-z_]\w*)(?:\.\w+|\[[^\]]*\])*) is (?:not )?"
            r"(?!None$|True$|False$|Ellipsis$|NotImplemented$)(?P<other>(?:[LG]\['[^']*'\]|[A-Za-z_]\w*)(?:\.\w+|\[[^\]]*\])*)$"
        ),
        hint="aliasing",
    ),
    GuardKind(
        "EQUALS_MATCH",
        _VALUE,
        flat=_p(r"^(?P<src>[LG]\[.+?) (?:==|is|is not|!=) "),
        failure=_p(rf"^(?P<src>[^=!<>]+?) (?:{EQUALITY_OPS}) (?P<val>.+)$"),
        pins=True,
        hint="value",
    ),
    GuardKind("CONSTANT_MATCH", _VALUE, pins=True, hint="value"),
    # torch >= 2.6 lists `x == True`, `x == False`, `x is None` under kinds of their own.
    GuardKind("TRUE_MATCH", _VALUE, pins=True, hint="value"),
    GuardKind("FALSE_MATCH", _VALUE, pins=True, hint="value"),
    GuardKind("NONE_MATCH", _VALUE, pins=True, hint="value"),
    # A guard torch builds from a lambda or a shape expression, and the flat lines nothing above matches.
    GuardKind("LAMBDA_GUARD", _OTHER),
)

@dataclass(frozen=True)
class ShapeForm:
    """One form of a symbolic-size guard (torch's shape environment: what a dynamic size must keep for the
    entry to be reused), told by the guard's skeleton: its condition (guardexpr.size_condition) with each size
    term written ``S``, a stride or storage offset ``R``, a bare size symbol (``s0``, ``u1``) ``Y``, numbers as
    they are. A cause keeps the form's ``name`` (``Cause.shape``); render/ says it in words."""

    name: str
    skeleton: re.Pattern[str]


_T = r"[SY]"
_N = r"-?\d+"
# In order: the first form whose pattern matches the skeleton decides.
SHAPE_FORMS: tuple[ShapeForm, ...] = (
    # torch keeps sizes 0 and 1 apart (their own entries): a dynamic size's entry holds for sizes >= 2.
    ShapeForm("size_0_1", re.compile(rf"^2 <= {_T}$")),
    ShapeForm("range", re.compile(rf"^{_N} <= {_T} <= {_N}$|^{_N} <= ({_T}) and \1 <= {_N}$")),
    ShapeForm("lower_bound", re.compile(rf"^{_N} <=? {_T}$|^{_T} >=? {_N}$")),
    ShapeForm("upper_bound", re.compile(rf"^{_T} <=? {_N}$|^{_N} >=? {_T}$")),
    # A branch on a remainder (`if x.size(1) % 8 == 0`), also where the remainder is part of a larger expression.
    ShapeForm("divisibility", re.compile(r"%")),
    ShapeForm("specialized", re.compile(rf"^{_T} == {_N}$|^{_N} == {_T}$")),
    ShapeForm("excluded", re.compile(rf"^{_T} != {_N}$|^{_N} != {_T}$")),
    # A stride or storage offset against a size: the layout of the tensor (contiguity), not its sizes.
    ShapeForm("layout", re.compile(r"R")),
    ShapeForm("relation", re.compile(rf"^{_T} (?:==|!=|<=|<|>=|>) {_T}$")),
    # Arithmetic over sizes (`x.size(0) * x.size(1) <= 4096`): said as torch printed it.
    ShapeForm("expression", re.compile(r"")),
)
SHAPE_FORM_NAMES = tuple(f.name for f in SHAPE_FORMS)
_SKELETON_TERM = re.compile(r"[\w.\[\]'()]*?\.(size|stride|storage_offset)\(\d*\)|\b[su]\d+\b")


def shape_form(condition: str) -> str:
    """The form (a :data:`SHAPE_FORMS` name) of a symbolic-size guard's condition in the user's spelling
    (``x.size(1) % 8 == 0`` -> ``divisibility``)."""
    skeleton = _SKELETON_TERM.sub(lambda m: "R" if m[1] in ("stride", "storage_offset") else "S" if m[1] else "Y", condition)
    return next(f.name for f in SHAPE_FORMS if f.skeleton.search(skeleton))


BY_NAME: dict[str, GuardKind] = {k.name: k for k in KINDS}
# What a kind torch adds later (not in the table) counts as.
UNKNOWN_KIND = GuardKind("", Category.OTHER)
FLAT_FALLBACK = "LAMBDA_GUARD"

# (pattern, kind) of flat listing lines, in the order they are tried.
FLAT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple((p, k.name) for k in KINDS for p in k.flat)
# (pattern, kind) of failure texts, in the order they are tried.
FAILURE_PATTERNS: tuple[tuple[re.Pattern[str], GuardKind], ...] = tuple((p, k) for k in KINDS for p in k.failure)
# Kinds whose expression pins one concrete value: a change between two compiles names the cause.
PINNING_KINDS: frozenset[str] = frozenset(k.name for k in KINDS if k.pins)
# Kind -> the ambient state it checks (explain reads these guards as state, not as objects).
AMBIENT_KINDS: dict[str, str] = {k.name: k.ambient for k in KINDS if k.ambient}
# torch < 2.2's own call for one piece of global state, spelled as torch >= 2.2's failure text.
_STATE_CHANGES = tuple(
    (re.compile(rf"^(?:not )?{s.flat_call}\(\)$"), f"GLOBAL_STATE changed: {s.field}") for s in AMBIENT_STATES if s.field
)


# torch's own hints on a guard, as facts: torch >= 2.8 ends the comment of a guard it installed on an int
# read from an nn.Module (any nn.Module: the module argument, a submodule, a builtin one) with
# ``(HINT: torch.compile considers integer attributes of the nn.Module to be static. ...)``
# (torch/_dynamo/variables/builder.py, ``recompile_hint``; pytorch#154867). The id is what a Cause keeps.
TORCH_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nn_module_int", re.compile(r"\(HINT: torch\.compile considers integer attributes of the nn\.Module to be static")),
)


def torch_hint(comment: str) -> str:
    """The id of torch's own hint in a guard's comment (:data:`TORCH_HINTS`), or ``""``."""
    return next((name for name, pattern in TORCH_HINTS if pattern.search(comment)), "")


def kind(name: str) -> GuardKind:
    """The row of a kind; :data:`UNKNOWN_KIND` (category ``other``) for a kind the table lacks."""
    return BY_NAME.get(name, UNKNOWN_KIND)


def flat_kind(expr: str) -> tuple[str, re.Match[str] | None]:
    """The kind of a flat listing line's expression and the match that told it (None: LAMBDA_GUARD)."""
    for pattern, name in FLAT_PATTERNS:
        m = pattern.search(expr)
        if m is not None:
            return name, m
    return FLAT_FALLBACK, None


# A log of thousands of compiles or ranks repeats a few failure texts: each is matched against the table once.
@functools.lru_cache(maxsize=4096)
def failure_kind(expr: str) -> tuple[GuardKind, re.Match[str]] | None:
    """The kind a failure text's expression spells, and the match; None when no row knows it."""
    for pattern, row in FAILURE_PATTERNS:
        m = pattern.search(expr)
        if m is not None:
            return row, m
    return None


def ambient_state(text: str) -> str:
    """The piece of global state a text mentions (``grad mode``), or ``""``."""
    return next((s.name for s in AMBIENT_STATES if s.spelling.search(text)), "")


def as_state_change(expr: str) -> str:
    """``___is_grad_enabled()`` (torch < 2.2) -> ``GLOBAL_STATE changed: grad_mode`` (torch >= 2.2's
    words for the same change); any other expression unchanged."""
    for pattern, change in _STATE_CHANGES:
        expr = pattern.sub(change, expr)
    return expr
