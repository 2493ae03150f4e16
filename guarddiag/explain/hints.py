"""Fix hints and torch eras: what to change so that a cause that really recompiled stops doing so.

Facts only. For each cause that recompiled, :class:`CauseFacts` gathers what the log, the run and the
user's source say about it: the hint family of its guard kind (``guardkinds.GuardKind.hint``), the
object's owner (an nn.Module, a dataclass, a plain object), whether automatic dynamic took it, what the
function changes in place, the graph break at its line. The family's rules (:data:`RULES`, tried in
order; the first that answers decides) make a :class:`FixHint` of them: a hint id, the object, the lines
to write as values (:class:`CodeLine`), and what guarddiag cannot tell with the choices for each case.
The words are in :mod:`guarddiag.render.explain_hints`; docs/hints.md lists each hint and its rule.
A hint depends on the torch that wrote the log: its version when known, else its era, told by the
shape of its guards.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from guarddiag import shell
from guarddiag.explain import facts as F
from guarddiag.explain.model import Choice, CodeLine, FixHint
from guarddiag.flags import flag_name
from guarddiag.guardexpr import as_source, readable_source, size_terms
from guarddiag.guardkinds import KINDS, UNKNOWN_KIND, failure_kind, kind
from guarddiag.ids import CompileId
from guarddiag.model import Cause, CauseIdentity, DynamicDims, FunctionSummary, GraphBreak, Guard, StackSlot
from guarddiag.sourceinfo import NN_MODULE, FunctionSource, Statement, class_kind, function_at, local_roles
from guarddiag.wrapped import frame_package

# Every hint: "fix" when applying it removes the recompile, "note" when the recompile is inherent or expected.
HINTS = {
    "reuse_module_or_upgrade": "fix",
    "inline_inbuilt_nn_modules": "fix",
    "allow_unspec_int_on_nn_module": "fix",
    "int_attribute_or_upgrade": "fix",
    "dynamic_sources": "fix",
    "became_dynamic": "note",
    "float_as_tensor": "fix",
    "global_as_argument": "fix",
    "code_path": "note",
    "steers_python": "note",
    "module_or_object": "note",
    "move_out_of_compiled": "fix",
    "value_at_graph_break": "note",
    "maybe_mark_dynamic": "fix",
    "mark_dynamic": "fix",
    "static_sizes": "fix",
    "pad_to_buckets": "fix",
    "size_one": "fix",
    "avoid_size_one": "fix",
    "dynamic_range": "note",
    "library_input": "note",
    "mutated_argument": "fix",
    "same_content": "fix",
    "stable_keys": "fix",
    "one_tensor_twice": "fix",
    "ambient_state": "note",
    "ambient_at_limit": "note",
}
# What a hint can say it cannot tell (FixHint.unknown); its choices answer each case.
UNKNOWNS = (
    "owner",  # whether the object holding an int attribute is an nn.Module (its class is not in the source at hand)
    "value_use",  # whether the code needs the Python number (a loop count, a shape, an argument torch takes as a number)
    "why_static",  # whether a size stayed static because of dynamic=False (or a config) or because the code needs it
    "tensor_lifetime",  # whether a tensor that is no argument is one object kept across calls or made anew
    "moved_values",  # a statement to move out reads values the function computes and does not return
    "no_source",  # the compiled function's source is not at hand: whether it changes the object itself
    "unwritable",  # torch's name for the object is no line of Python (or setting entry) that means it: no line given
)
# Config hints: the setting, the torch that added it, and the command that verifies it on the script.
SETTINGS = {
    "inline_inbuilt_nn_modules": ("torch._dynamo.config.inline_inbuilt_nn_modules", (2, 4)),
    "allow_unspec_int_on_nn_module": ("torch._dynamo.config.allow_unspec_int_on_nn_module", (2, 7)),
    "dynamic_sources": ("torch.compiler.config.dynamic_sources", (2, 7)),
    "size_one": ("torch.fx.experimental._config.backed_size_oblivious", (2, 7)),
}
_CHECKS = {
    "inline_inbuilt_nn_modules": "guarddiag compare SCRIPT --flag inline_inbuilt_nn_modules=true",
    "allow_unspec_int_on_nn_module": "guarddiag compare SCRIPT --flag allow_unspec_int_on_nn_module",
    "steers_python": "guarddiag compare SCRIPT --flag recompile_limit=N",
}
# Settings that hold a comma-separated list of sources in one string (joined_settings).
_LIST_SETTINGS = frozenset({SETTINGS["dynamic_sources"][0]})
# Per-dim entries of the dynamic-sources setting (``L['x']:0``): checked on torch 2.13; before it an entry
# names a whole tensor (every dim dynamic), which torch 2.7 reads.
_DIM_ENTRIES = (2, 13)
_VERSION = re.compile(r"^(\d+)\.(\d+)")
_ATTRIBUTE = re.compile(r"^(?P<parent>.+)\.(?P<attr>\w+)$")
_PLAIN_ARGUMENT = re.compile(r"^L\['(?P<name>[A-Za-z_]\w*)'\]$")
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][-+]?\d+|inf|nan)$")
_MODULE_INTERNALS = ("._modules", "._parameters", "._buffers")


def _version_tuple(version: str | None) -> tuple[int, int] | None:
    m = _VERSION.match(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def torch_era(torch_version: str | None, guards: Iterable[Guard]) -> str:
    """How nn.Modules are guarded in the torch that wrote the log: by the version when known, else by the guards' shape."""
    v = _version_tuple(torch_version)
    if v is not None:
        return "inlined-modules" if v >= (2, 5) else "id-modules" if v >= (2, 4) else "id-modules-old"
    # One pass: a module checked by type settles it at once, the rest needs every guard.
    # torch < 2.4 prints flat guard lists; their shapes differ from the tree's (``___is_grad_enabled()``).
    flat = training = False
    for g in guards:
        kind = g.kind
        if kind == "TYPE_MATCH":
            if "._modules" in g.source or "nn.modules" in g.expr and F.ROOT_SOURCE.match(g.source):
                return "inlined-modules"
        elif kind == "DYNAMIC_INDICES":
            flat = True
        elif kind in ("ID_MATCH", "EQUALS_MATCH") and g.source.endswith(".training"):
            training = True
        if not flat and "___is_grad_enabled" in g.expr:
            flat = True
    if training:
        return "id-modules-old" if flat else "id-modules"
    return "old" if flat else "unknown"


def _has_flag(torch_version: str | None, era: str, since: tuple[int, int]) -> bool | None:
    """Whether the torch that wrote the log has a config flag added in ``since``; None when it cannot be told."""
    v = _version_tuple(torch_version)
    if v is not None:
        return v >= since
    if era in ("id-modules-old", "old"):
        return False
    if era == "id-modules":
        return since <= (2, 4)
    return None


@dataclass(frozen=True)
class CauseFacts:
    """What the log, the run and the user's source say about one cause that recompiled: what the rules decide on.

    ``family``: the hint family of the cause's guard kind; ``groups``: what torch's failure text names (``what``,
    ``dim``, ``expected``, ``actual``); ``source``: the object in torch's listing spelling; ``role``: the role of
    its root name (``argument``, ``global``...; ``""`` when the source is not at hand); ``owner``: what holds an
    attribute (sourceinfo's ``nn_module``, ``dataclass``, ``object``; ``unknown``; ``""``: no attribute);
    ``dynamic``: what automatic dynamic made dynamic in the function; ``changed``: the tensors (and dims) whose
    sizes changed between the entry the call failed against and the compile it caused; ``static_after``: that
    compile still pins the size that changed; ``function``: the user's function around the compiled code;
    ``graph_break``: the graph break at the line torch read the object on, if any."""

    cause: Cause
    count: int
    file: str
    family: str
    row: str
    groups: Mapping[str, str]
    source: str
    role: str
    owner: str
    dynamic: tuple[DynamicDims, ...]
    changed: tuple[tuple[str, tuple[int, ...]], ...]
    static_after: bool
    function: FunctionSource | None
    graph_break: GraphBreak | None
    library: str
    limit_hit: bool
    torch_version: str | None
    era: str
    # A resume function's stack slots: a slot is named by the expression it holds where the source tells it.
    slots: tuple[StackSlot, ...] = ()
    # Whose code called the function when it compiled (FunctionSummary.callers; empty: not known).
    callers: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The object in the user's words: ``cfg.top_k``; a stack slot as the user's expression it holds."""
        name = F.user_name(self.source)
        root = F.root(self.source)
        slot = next((s for s in self.slots if s.name == root and s.expression), None)
        return f"{slot.expression}{name[len(root):]}" if slot is not None and name.startswith(root) else name

    @property
    def function_name(self) -> str:
        """The user's function a per-call line is about: the one the compiled code is (or continues)."""
        return self.function.name if self.function is not None else ""

    @property
    def literal(self) -> str:
        value = F.VALUE.match(as_source(self.cause.guard))
        return value["val"] if value else ""

    @property
    def dim(self) -> int | None:
        dim = self.groups.get("dim")
        return int(dim) if dim else None

    def has(self, hint: str) -> bool | None:
        """Whether the torch that wrote the log has the setting of a config hint (None: cannot be told)."""
        return _has_flag(self.torch_version, self.era, SETTINGS[hint][1])

    def dims_of(self, source: str) -> tuple[int, ...] | None:
        """The dims automatic dynamic made dynamic in ``source`` (``()``: a number made dynamic), None: not taken."""
        wanted = readable_source(source)
        return next((d.dims for d in self.dynamic if readable_source(d.source) == wanted), None)


@dataclass(frozen=True)
class Answer:
    """What a rule says: the hint, its object (or the objects found aliased), the value it names, its lines, its
    choices, what it cannot tell."""

    hint: str
    subject: str
    literal: str = ""
    lines: tuple[CodeLine, ...] = ()
    choices: tuple[Choice, ...] = ()
    unknown: str = ""
    aliased: tuple[str, ...] = ()


Rule = Callable[[CauseFacts], Answer | None]


def fix_hints(
    f: FunctionSummary,
    torch_version: str | None,
    era: str,
    listings: Mapping[int, tuple[Guard, ...]] | None = None,
    graph_breaks: Iterable[GraphBreak] = (),
) -> tuple[FixHint, ...]:
    """One hint per distinct advice for the causes that really recompiled, specific to the torch that wrote the log.

    ``listings``: the function's guard listings by compile number; ``graph_breaks``: every graph break of the
    run (a resume function's value is read on a line its parent function broke the graph at)."""
    listings = listings or {}
    seen: dict[CauseIdentity, tuple[Cause, int, CompileId]] = {}
    for event in f.recompile_events:
        c = event.causes[0]
        # One per cause group, as run's report groups them: two dims of one tensor are two causes, each with its hint.
        key = c.key
        seen[key] = (seen[key][0], seen[key][1] + 1, seen[key][2]) if key in seen else (c, 1, event.compile_id)
    breaks = tuple(graph_breaks)
    hints: dict[tuple[object, ...], FixHint] = {}
    for cause, count, compile_id in seen.values():
        found = _answer(_facts(cause, count, compile_id, f, torch_version, era, listings, breaks))
        if found is None:
            continue
        found = _written(found)
        key = (found.hint, found.subject, found.literal, found.lines, found.choices, found.unknown, found.aliased)
        same = hints.get(key)
        causes = (cause,) if same is None else (*same.causes, cause)
        hints[key] = FixHint(
            causes,
            count + (same.count if same else 0),
            found.hint,
            found.subject,
            found.literal,
            _check(found.hint, found.lines),
            HINTS[found.hint],
            found.lines,
            found.choices,
            found.unknown,
            found.aliased,
        )
    return tuple(hints.values())


def _answer(x: CauseFacts) -> Answer | None:
    for rule in RULES.get(x.family, ()):
        found = rule(x)
        if found is not None:
            return found
    return None


def _check(hint: str, lines: tuple[CodeLine, ...]) -> str:
    """The command that verifies a config hint on the script: its settings, flipped together by ``guarddiag compare``."""
    if hint in _CHECKS:
        return _CHECKS[hint]
    flags = [_flag(line) for line in lines if line.setting]
    if not flags or len(flags) < len(lines):
        return ""
    return "guarddiag compare SCRIPT " + " ".join(f"--flag {f}" for f in flags) + (" --combined" if len(flags) > 1 else "")


def _flag(line: CodeLine) -> str:
    """``--flag``'s argument for a config line, quoted for a shell."""
    name, value = config_of(line)
    return shell.quote(f"{name}={value}")


def config_of(line: CodeLine) -> tuple[str, str]:
    """The flip a config line makes, as ``guarddiag compare --flag`` takes it: (``compiler.dynamic_sources``,
    ``L['x']:0``): the setting's catalog name, the value without its quotes (a bool as true/false)."""
    raw = ast.literal_eval(line.value)
    value = raw if isinstance(raw, str) else str(raw).lower() if isinstance(raw, bool) else line.value
    return flag_name(line.setting), value


def joined_settings(per_function: Sequence[tuple[FixHint, ...]]) -> list[tuple[FixHint, ...]]:
    """The hints of a run (per function) with every line that sets a list setting (the dynamic-sources setting)
    naming all the entries the run's hints name for it: a script holds one value, and a second assignment
    replaces the first, so two hints that each wrote their own would undo each other. Unchanged where they agree."""
    entries: dict[str, dict[str, None]] = {}
    values: dict[str, set[str]] = {}
    for h in (h for hints in per_function for h in hints):
        for line in _every_line(h):
            if line.setting in _LIST_SETTINGS:
                values.setdefault(line.setting, set()).add(line.value)
                for entry in str(ast.literal_eval(line.value)).split(","):
                    entries.setdefault(line.setting, {})[entry] = None
    joined = {
        setting: CodeLine(f"{setting} = {value}", "top_of_script", setting=setting, value=value)
        for setting, found in entries.items()
        if len(values[setting]) > 1 and (value := repr(",".join(found)))
    }
    if not joined:
        return list(per_function)

    def join(lines: tuple[CodeLine, ...]) -> tuple[CodeLine, ...]:
        return tuple(joined.get(line.setting, line) if line.setting else line for line in lines)

    def rewrite(h: FixHint) -> FixHint:
        lines = join(h.lines)
        choices = tuple(dataclasses.replace(c, lines=join(c.lines)) for c in h.choices)
        return dataclasses.replace(h, lines=lines, choices=choices, check=_check(h.hint, lines) if lines != h.lines else h.check)

    return [tuple(rewrite(h) for h in hints) for hints in per_function]


def _every_line(h: FixHint) -> Iterable[CodeLine]:
    yield from h.lines
    for c in h.choices:
        yield from c.lines


def hint_configs(lines: tuple[CodeLine, ...]) -> tuple[tuple[str, str], ...]:
    """The flips of a hint's (or a choice's) lines when every line is a config line (none: a code change)."""
    return tuple(config_of(line) for line in lines) if lines and all(line.setting for line in lines) else ()


# --- the facts ----------------------------------------------------------------------------------------


def _family(c: Cause) -> tuple[str, str, Mapping[str, str]]:
    """The hint family (its kind's ``hint``), kind and failure-text groups of a cause; a cause of no kind of its
    category (a kind the table lacks), or one read from two listings, takes the first row of its category with a family."""
    row = kind(c.kind)
    if c.inferred is not None or row is UNKNOWN_KIND or row.category.value != c.category:
        row = next((k for k in KINDS if k.category.value == c.category and k.hint), UNKNOWN_KIND)
        return row.hint, "", {}
    # The sizes before and after (``expected 32, actual 1``) are in torch's text: a rule tells a size of 0 or 1 by them.
    found = failure_kind(as_source(c.text)) or failure_kind(c.text)
    groups = found[1].groupdict() if found is not None and found[0] is row else {}
    return row.hint, row.name, {k: v for k, v in groups.items() if v is not None}


def _facts(
    c: Cause,
    count: int,
    compile_id: CompileId,
    f: FunctionSummary,
    torch_version: str | None,
    era: str,
    listings: Mapping[int, tuple[Guard, ...]],
    breaks: tuple[GraphBreak, ...],
) -> CauseFacts:
    family, row, groups = _family(c)
    source = _listing_source(c, f, listings)
    guards = tuple(g for gs in listings.values() for g in gs)
    number = compile_id.number
    before = listings.get(c.cache_entry.number, ()) if c.cache_entry else ()
    function = function_at(f.file, f.line or 0) if f.file else None
    return CauseFacts(
        c,
        count,
        f.file,
        family,
        row,
        groups,
        source,
        _role(source, f, function),
        _owner(source, guards, f, era),
        f.dynamic_dims,
        _changed_sizes(before, listings.get(number, ())),
        _static_after(source, groups, listings.get(number, ())),
        function,
        _break_at(c, f, breaks),
        _library(f.file),
        f.limit_hit,
        torch_version,
        era,
        f.resume.slots if f.resume is not None else (),
        f.callers,
    )


def _listing_source(c: Cause, f: FunctionSummary, listings: Mapping[int, tuple[Guard, ...]]) -> str:
    """The object in the listing spelling (``L['cfg'].top_k``): torch >= 2.6 prints failures bare, and a bare
    name may be a global; the listings and the dynamic dims spell it as torch does."""
    if not c.source or c.source.startswith(("L[", "G[")):
        return c.source
    wanted = readable_source(c.source)
    for d in f.dynamic_dims:
        if readable_source(d.source) == wanted:
            return d.source
    for guards in listings.values():
        for g in guards:
            if g.source and readable_source(g.source) == wanted:
                return g.source
    return as_source(c.source)


def _role(source: str, f: FunctionSummary, function: FunctionSource | None) -> str:
    """``argument``, ``global``, ``closure variable``, ``local`` for the root of ``source``; ``""`` when the source
    is not at hand. A resume function's locals are those of the user's function it continues."""
    if source.startswith("G["):
        return "global"
    root = F.root(source)
    roles = local_roles(f.file, f.name, f.line)
    if roles and root:
        # A global torch >= 2.6 prints bare is spelled L[...] only when no listing names it.
        return roles.get(root, "local" if source.startswith("L[") else "global")
    if function is None or not root:
        return ""
    return "argument" if root in function.params else "local"


def _owner(source: str, guards: tuple[Guard, ...], f: FunctionSummary, era: str) -> str:
    """What holds an attribute ``P.attr``: an nn.Module when the listing reads module internals under ``P`` (or
    torch 2.4 checks ``P`` by id(), as it does modules), else the kind of ``P``'s class in the user's file."""
    m = _ATTRIBUTE.match(source)
    if m is None or source.startswith("G[") and "._modules[" not in source:
        return ""
    parent = m["parent"]
    if "._modules[" in parent:
        return NN_MODULE
    qualname = ""
    for g in guards:
        if g.source.startswith(parent) and g.source[len(parent) :].startswith(_MODULE_INTERNALS):
            return NN_MODULE
        if g.source == parent and g.kind in ("TYPE_MATCH", "ID_MATCH"):
            fact = F.read_guard(g)
            qualname = (fact.extra.get("type", "") if fact else "") or qualname
            if g.kind == "ID_MATCH" and era.startswith("id-modules"):
                return NN_MODULE
    module, _, name = qualname.rpartition(".")
    in_file = module == "__main__" or bool(f.file) and f.file.rsplit("/", 1)[-1].removesuffix(".py") == module.rpartition(".")[2]
    kind = class_kind(f.file, name) if name and in_file else ""
    return kind or "unknown"


def _tensor_sizes(listing: tuple[Guard, ...]) -> dict[str, list[str]]:
    """Each tensor a listing checks, with its sizes as listed (``None``: a dynamic dim)."""
    sizes = {}
    for g in listing:
        fact = F.read_guard(g) if g.kind == "TENSOR_MATCH" else None
        if fact is not None and fact.how == "tensor":
            sizes[fact.source] = [s.strip() for s in fact.extra.get("size", "").split(",")]
    return sizes


def _changed_sizes(before: tuple[Guard, ...], after: tuple[Guard, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The tensors checked by both listings whose sizes differ, and the dims that differ: what changed together."""
    old = _tensor_sizes(before)
    changed = []
    for source, sizes in _tensor_sizes(after).items():
        was = old.get(source)
        if was is not None and len(was) == len(sizes):
            dims = tuple(i for i, (a, b) in enumerate(zip(was, sizes, strict=True)) if a != b)
            if dims:
                changed.append((source, dims))
    return tuple(changed)


def _static_after(source: str, groups: Mapping[str, str], listing: tuple[Guard, ...]) -> bool:
    """Whether the compile a size change caused still pins that dim (automatic dynamic did not take it)."""
    dim = groups.get("dim")
    if groups.get("what") != "size" or dim is None:
        return False
    sizes = _tensor_sizes(listing).get(source, [])
    return int(dim) < len(sizes) and sizes[int(dim)].isdigit()


def _break_at(c: Cause, f: FunctionSummary, breaks: tuple[GraphBreak, ...]) -> GraphBreak | None:
    """The graph break on the line torch read the object on (``e4.py:13 in train_step``), in the function's file."""
    where = c.location.partition(" in ")[0]
    line = where.rpartition(":")[2]
    if not line.isdigit() or not f.file:
        return None
    return next((b for b in breaks if b.location == f"{f.file}:{line}"), None)


def _library(file: str | None) -> str:
    """The installed package a compiled function's code is in (``transformers``), or ``""`` (user code, torch)."""
    package = frame_package(file)
    return package if package != "torch" else ""


# --- the lines ----------------------------------------------------------------------------------------


def _setting(hint: str, value: str) -> CodeLine:
    """A config line: ``torch.compiler.config.dynamic_sources = "L['x']:0"``, at the top of the script."""
    setting = SETTINGS[hint][0]
    return CodeLine(f"{setting} = {value}", "top_of_script", setting=setting, value=value)


def _dynamic_sources(x: CauseFacts, tensors: Iterable[tuple[str, tuple[int, ...]]]) -> CodeLine:
    """The dynamic-sources setting naming each source (and dim, where the torch reads per-dim entries)."""
    # Unknown torch: whole tensors, which every torch with the setting reads (a per-dim entry another torch ignores).
    per_dim = _has_flag(x.torch_version, x.era, _DIM_ENTRIES) is True
    entries: list[str] = []
    for source, dims in tensors:
        entries += [f"{source}:{d}" for d in dims] if dims and per_dim else [source]
    return _setting("dynamic_sources", repr(",".join(dict.fromkeys(entries))))


def _marking(x: CauseFacts, marker: str, source: str, dim: int) -> CodeLine:
    """``torch._dynamo.maybe_mark_dynamic(x, 0)`` before each call, on the value passed as ``x``."""
    return CodeLine(f"torch._dynamo.{marker}({F.user_name(source)}, {dim})", "before_each_call", x.function_name, F.root(source))


def _moved(statement: Statement, x: CauseFacts) -> tuple[CodeLine, ...]:
    """The statement moved out of the compiled function to after each call, when it reads only what the caller
    has: the parameters (the values passed), what the function returns (the call's result) and globals."""
    fn = x.function
    if fn is None or not statement.call:
        return ()
    computed = set(fn.bound) - set(fn.returned)
    if computed & set(statement.reads):
        return ()
    result = fn.returned[0] if fn.returned else ""
    return (CodeLine(statement.code, "after_each_call", fn.name, result, f"{x.file}:{statement.line}"),)


# --- lines that mean what they say -------------------------------------------------------------------------
# A log can name anything (a dict key, a crafted or pasted log): a line is given only when, parsed back, it is
# what its kind says: a config line sets its setting to a literal (the dynamic-sources setting: entries torch
# reads one by one), a marking calls torch's marker on a name, an attribute or a literal subscript, a wrapped
# argument is a name. A statement moved out is the user's own, read from their source.
_LISTED_SOURCE = re.compile(r"[LG]\['[A-Za-z_]\w*'\](?:\.[A-Za-z_]\w*|\[(?:'[^'\\,\s]*'|\d+)\])*(?::\d+)?")
_MARKERS = ("torch._dynamo.maybe_mark_dynamic", "torch._dynamo.mark_dynamic")


def _reference(node: ast.expr) -> bool:
    """A name, or an attribute or a subscript by a str or int literal of one (``batch['ids'].mask``)."""
    while True:
        literal = isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and type(node.slice.value) in (str, int)
        if isinstance(node, ast.Attribute) or literal:
            node = node.value  # type: ignore[union-attr]
        else:
            return isinstance(node, ast.Name)


def _writable(line: CodeLine) -> bool:
    """Whether the line, parsed, is the one statement its kind makes (see above)."""
    if line.where == "after_each_call":
        return True
    try:
        (statement,) = ast.parse(line.code).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if line.setting:
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)):
            return False
        value = statement.value.value
        entries = value.split(",") if isinstance(value, str) and line.setting == SETTINGS["dynamic_sources"][0] else ()
        return ast.unparse(statement.targets) == line.setting and all(_LISTED_SOURCE.fullmatch(e) for e in entries)
    if not isinstance(statement, ast.Expr) or not isinstance(call := statement.value, ast.Call) or call.keywords:
        return False
    name, args = ast.unparse(call.func), call.args
    if name in _MARKERS:
        return len(args) == 2 and _reference(args[0]) and isinstance(args[1], ast.Constant) and type(args[1].value) is int
    return name == "torch.tensor" and len(args) == 1 and isinstance(args[0], ast.Name)


def _written(a: Answer) -> Answer:
    """The answer with only lines that can be written: a choice with another line is left out; a hint whose
    own line cannot be written keeps its advice, without lines, and says why."""
    choices = tuple(c for c in a.choices if all(_writable(line) for line in c.lines))
    if all(_writable(line) for line in a.lines):
        return a if choices == a.choices else dataclasses.replace(a, choices=choices)
    return dataclasses.replace(a, lines=(), choices=choices, unknown="unwritable")


# --- the rules, per hint family of the guard-kind table ---------------------------------------------------


def _module_identity(x: CauseFacts) -> Answer | None:
    """torch <= 2.4 checks an nn.Module by id(): another instance recompiles."""
    if "." in x.name or not x.era.startswith("id-modules"):
        return None
    inline = _has_flag(x.torch_version, x.era, SETTINGS["inline_inbuilt_nn_modules"][1])
    if inline is False:
        return Answer("reuse_module_or_upgrade", x.name)
    return Answer("inline_inbuilt_nn_modules", x.name, lines=(_setting("inline_inbuilt_nn_modules", "True"),))


def _at_graph_break(x: CauseFacts) -> Answer | None:
    """A value torch reads on a line that broke the graph (``log.info(..., loss.item())``): the line hands it to
    Python; moving the line out of the compiled function removes the guard and the break."""
    if x.graph_break is None or x.function is None:
        return None
    line = int(x.graph_break.location.rpartition(":")[2])
    statement = x.function.statement_at(line)
    if statement is None:
        return None
    lines = _moved(statement, x)
    if lines:
        return Answer("move_out_of_compiled", x.name, lines=lines)
    return Answer("value_at_graph_break", x.name, unknown="moved_values" if statement.call else "")


def _code_path(x: CauseFacts) -> Answer | None:
    literal = x.literal
    if literal in ("True", "False", "None") or literal[:1] in ("'", '"'):
        return Answer("code_path", x.name, literal)
    return None


def _module_int(x: CauseFacts) -> Answer | None:
    """An int attribute of an nn.Module stays specialized (allow_unspec_int_on_nn_module=False): each value compiles."""
    if x.owner != NN_MODULE or not _INT.match(x.literal) or x.dims_of(x.source) is not None:
        return None
    if x.has("allow_unspec_int_on_nn_module") is False:
        return Answer("int_attribute_or_upgrade", x.name)
    # The flag makes it an int like others (automatic dynamic: one recompile, then dynamic); the dynamic-sources
    # setting, which torch lets override nn.Module specialization, makes it dynamic from the first compile.
    first = (Choice("dynamic_sources", (_dynamic_sources(x, [(x.source, ())]),)),) if x.has("dynamic_sources") is not False else ()
    return Answer("allow_unspec_int_on_nn_module", x.name, lines=(_setting("allow_unspec_int_on_nn_module", "True"),), choices=first)


def _became_dynamic(x: CauseFacts) -> Answer | None:
    """A number automatic dynamic made dynamic after this recompile: an int named in the dynamic-sources
    setting is dynamic from the first compile; a float is made dynamic by passing a tensor."""
    if x.dims_of(x.source) != ():
        return None
    if _FLOAT.match(x.literal) and not _INT.match(x.literal):
        plain = _PLAIN_ARGUMENT.match(x.source) if x.role == "argument" else None
        lines = (CodeLine(f"torch.tensor({plain['name']})", "wrap_argument", x.function_name, plain["name"]),) if plain else ()
        return Answer("float_as_tensor", x.name, lines=lines)
    if x.has("dynamic_sources") is False:
        return Answer("became_dynamic", x.name)
    return Answer("dynamic_sources", x.name, lines=(_dynamic_sources(x, [(x.source, ())]),))


def _owner_unknown(x: CauseFacts) -> Answer | None:
    """An int attribute that stays specialized on an object whose class guarddiag cannot see: an nn.Module's
    would take the flag; any other object's int steers Python."""
    if x.owner != "unknown" or not _INT.match(x.literal) or x.dims_of(x.source) is not None:
        return None
    flag = x.has("allow_unspec_int_on_nn_module") is not False
    module = Choice("allow_unspec_int_on_nn_module", (_setting("allow_unspec_int_on_nn_module", "True"),)) if flag else None
    other = Choice("steers_python")
    return Answer("module_or_object", x.name, choices=tuple(c for c in (module, other) if c), unknown="owner")


def _global_value(x: CauseFacts) -> Answer | None:
    return Answer("global_as_argument", x.name) if x.role == "global" else None


def _steers_python(x: CauseFacts) -> Answer | None:
    """A number torch kept specialized although it changed: the code needs its Python value, or it is one
    guarddiag cannot see a way around."""
    return Answer("steers_python", x.name, unknown="value_use")


def _library_input(x: CauseFacts) -> Answer | None:
    """A tensor a library's compiled function takes, where that library calls it (generate() calling a compiled
    forward): no line in the user's script reaches it. Where the run saw only other code call it (the user's
    ``model(**batch)``), the user passes the tensor, and the size rules answer."""
    if not x.library or x.role not in ("argument", ""):
        return None
    if x.callers and x.library not in x.callers:
        return None
    return Answer("library_input", x.name or "x", x.library)


def _size_one(x: CauseFacts) -> Answer | None:
    """A size of 0 or 1 where the entry had another (or the other way round): torch specializes sizes 0 and 1,
    so a dynamic dim does not cover them; size-oblivious backed sizes do, on a dim that is dynamic."""
    sizes = {x.groups.get("expected"), x.groups.get("actual")}
    if x.groups.get("what") != "size" or x.dim is None or not sizes & {"0", "1"}:
        return None
    return _size_one_answer(x, _together(x, x.dim))


def _together(x: CauseFacts, dim: int) -> list[tuple[str, tuple[int, ...]]]:
    """The tensors and dims whose sizes changed in this recompile, the cause's own first (a batch dim changes
    in every tensor of the batch: marking one leaves the others to recompile)."""
    others = [(s, dims) for s, dims in x.changed if s != x.source]
    own = next((dims for s, dims in x.changed if s == x.source), ())
    return [(x.source, tuple(sorted({dim, *own}))), *others]


def _size_one_answer(x: CauseFacts, to_mark: list[tuple[str, tuple[int, ...]]]) -> Answer:
    avoid = Choice("avoid_size_one")
    if x.has("size_one") is False:
        return Answer("avoid_size_one", x.name, str(x.dim) if x.dim is not None else "")
    lines = (_setting("size_one", "True"), *((_dynamic_sources(x, to_mark),) if to_mark else ()))
    return Answer("size_one", x.name, str(x.dim) if x.dim is not None else "", lines, (avoid,))


def _sizes(x: CauseFacts) -> Answer | None:
    """A size that changed: make the dims that vary dynamic (every tensor whose size changed with it), or pad
    to a few sizes. ``maybe_mark_dynamic`` on each new tensor a caller passes (``mark_dynamic`` raises where
    torch must specialize, and marks one tensor object only); the dynamic-sources setting reaches any source."""
    if x.groups.get("what") != "size" or x.dim is None:
        return None
    dim = x.dim
    tensors = _together(x, dim)
    config = (Choice("dynamic_sources", (_dynamic_sources(x, tensors),)),) if x.has("dynamic_sources") is not False else ()
    pad = Choice("pad_to_buckets")
    # A line before each call reaches what the caller passes; a module's parameter or buffer only the setting does.
    passed = x.role == "argument" and all(F.root(s) != "self" and not any(p in s for p in _MODULE_INTERNALS) for s, _ in tensors)
    markings = tuple(_marking(x, "maybe_mark_dynamic", s, d) for s, ds in tensors for d in ds)
    marks = (Choice("maybe_mark_dynamic", markings),) if passed else ()
    plain = passed and all(_PLAIN_ARGUMENT.match(s) for s, _ in tensors)
    if x.static_after:
        choices = (*(marks if plain or not config else ()), *config, pad)
        return Answer("static_sizes", x.name, str(dim), choices=choices, unknown="why_static")
    if x.role != "argument":
        lives = Choice("mark_dynamic", tuple(_marking(x, "mark_dynamic", s, d) for s, ds in tensors for d in ds))
        if config:
            return Answer("dynamic_sources", x.name, str(dim), config[0].lines, (lives, pad), "tensor_lifetime")
        return Answer("mark_dynamic", x.name, str(dim), lives.lines, (pad,), "tensor_lifetime")
    if marks and (plain or not config):
        return Answer("maybe_mark_dynamic", x.name, str(dim), markings, (*config, pad))
    if config:
        return Answer("dynamic_sources", x.name, str(dim), config[0].lines, (*marks, pad))
    return Answer("pad_to_buckets", x.name, str(dim))


def _below_range(x: CauseFacts) -> Answer | None:
    """A dynamic entry's lower bound (``2 <= x.size(0)``) failed: a size of 0 or 1 came, which torch specializes."""
    if x.cause.shape != "size_0_1":
        return None
    term = next((t for t in size_terms(x.cause.guard) if t["what"] == "size" and t["dim"]), None)
    dim = term["dim"] if term is not None else ""
    return _size_one_answer(dataclasses.replace(x, groups={**x.groups, "dim": dim}), [])


def _dynamic_range(x: CauseFacts) -> Answer | None:
    """Any other size guard of a dynamic entry that broke (a branch on a remainder, a bound, a relation): the
    condition is the fact the words name; each side of it gets an entry of its own."""
    return Answer("dynamic_range", x.name, x.cause.condition)


def _mutated(x: CauseFacts) -> Answer | None:
    """A container the compiled function itself changes (``history.append(loss)``): each call sees it changed,
    so no caller can pass 'the same length'; the change moves out of the compiled function."""
    if x.function is None:
        return None
    root = F.root(x.source) or x.name.partition(".")[0].partition("[")[0]
    mutation = next((m for m in x.function.mutations if m.name == root), None)
    if mutation is None:
        return None
    lines = _moved(mutation.statement, x)
    return Answer("mutated_argument", x.name, mutation.how, lines, unknown="" if lines else "moved_values")


def _no_source(x: CauseFacts) -> Answer | None:
    """Without the function's source, whether it changes the container itself cannot be told: the advice to
    pass the same content holds only if it does not."""
    if x.function is not None:
        return None
    same = "stable_keys" if _changed_keys(x) else "same_content"
    return Answer(same, x.name, choices=(Choice(same), Choice("mutated_argument")), unknown="no_source")


def _keys(x: CauseFacts) -> Answer | None:
    return Answer("stable_keys", x.name) if _changed_keys(x) else None


def _changed_keys(x: CauseFacts) -> bool:
    """A dict's keys changed: torch's text names them, or (``len(d) != 2``: torch checks the length first) the
    cause says the keys the listings tell."""
    return x.row in ("DICT_KEYS", "DICT_KEYS_MATCH") or x.cause.keys is not None


def _content(x: CauseFacts) -> Answer | None:
    return Answer("same_content", x.name)


def _aliasing(x: CauseFacts) -> Answer | None:
    return Answer("one_tensor_twice", "", aliased=x.cause.aliased)


def _ambient(x: CauseFacts) -> Answer | None:
    """Grad mode, autocast...: one entry per setting is expected, unless the function is at its recompile
    limit, where those entries take the place of others (every other cause's entries count twice)."""
    return Answer("ambient_at_limit" if x.limit_hit else "ambient_state", x.cause.checked)


# Each hint family (guardkinds.GuardKind.hint) and its rules, tried in order. A new fact is one more rule.
RULES: dict[str, tuple[Rule, ...]] = {
    "identity": (_module_identity,),
    "value": (_at_graph_break, _code_path, _module_int, _became_dynamic, _owner_unknown, _global_value, _steers_python),
    "tensor": (_library_input, _size_one, _sizes),
    "dynamic_shape": (_below_range, _dynamic_range),
    "container": (_at_graph_break, _mutated, _no_source, _keys, _content),
    "aliasing": (_aliasing,),
    "global_state": (_ambient,),
}
