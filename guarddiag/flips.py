"""The config flips that could remove a recompile cause, as facts, and the plan of which to run.

:data:`FLIPS` is the table: each row says which causes a flip of one torch config flag answers (the
guard kind's hint family, :attr:`guarddiag.guardkinds.GuardKind.hint`, and facts the cause must have),
in which torch versions it does something, whether it removes recompiles or only keeps code compiled
past the recompile limit, and what it costs (an id: ``render/compare.py`` words it). :func:`plan_flips`
is pure: the target torch's flag catalog and the baseline run in, the causes with their candidate flips
and the configurations to run out, deduplicated across causes and capped. ``guarddiag compare`` without
``--flag`` runs the plan and measures each flip (``guarddiag.compare``); nothing here is a claim that a
flip works.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from guarddiag.diff import CauseKey, cause_key
from guarddiag.flags import Catalog
from guarddiag.guardexpr import ID_MARK, as_source, sized_source
from guarddiag.guardkinds import KINDS, failure_kind
from guarddiag.ids import FunctionKey
from guarddiag.limits import DEFAULT_RECOMPILE_LIMIT
from guarddiag.model import Cause, FunctionSummary, Run

# What a flip does to the cause it answers (Flip.effect).
REMOVES = "removes"  # the cause's recompiles should go
KEEPS_COMPILED = "keeps_compiled"  # the recompiles stay (more of them): calls past the limit stay compiled

# How a row's value is made from the cause (Flip.value, when it is one of these): the sources torch names
# the cause's objects by, as ``torch.compiler.config.dynamic_sources`` / ``unbacked_sources`` take them
# (``L['x']:0,L['y']``), or a recompile limit above the one in force.
SOURCES = "<sources>"
LIMIT = "<limit>"

# A recompile limit flip sets at least this (torch 2.1's cache_size_limit) and at least twice the limit in force.
RAISED_LIMIT = 64


@dataclass(frozen=True)
class Flip:
    """One row of :data:`FLIPS`: set ``flag`` (a catalog name: ``compiler.dynamic_sources``) to ``value``
    for a cause whose guard kind has hint family ``answers`` (``limit``: a recompile-limit hit) and that
    has every fact in ``needs`` and none in ``unless``. ``since``/``until``: the torch versions it does
    something in (None: wherever the flag exists, which the target torch's catalog says), ``until``
    excluded. ``cost``: what applying it costs, by id."""

    flag: str
    value: str
    answers: str
    needs: frozenset[str]
    cost: str
    unless: frozenset[str] = frozenset()
    since: tuple[int, int] | None = None
    until: tuple[int, int] | None = None
    effect: str = REMOVES


def _row(flag: str, value: str, answers: str, needs: str, cost: str, unless: str = "", **kw: object) -> Flip:
    return Flip(flag, value, answers, frozenset(needs.split()), cost, frozenset(unless.split()), **kw)  # type: ignore[arg-type]


# Facts (cause_facts): int, float (the guarded value's type); nn_module (torch's own hint says the int
# was read from an nn.Module, torch >= 2.8, or its owner is a submodule); named (torch can be told its
# source by name); size, size01 (a tensor size, or a size guard about 0 or 1); parameter (an nn.Parameter);
# module_hooks (a module's hook dicts); module_object (a local object or submodule checked by id()).
#
# Version ranges, from torch's source and history (pytorch/pytorch):
# - allow_unspec_int_on_nn_module: added by #142829 (Dec 2024: torch 2.7; 2.4.1's catalog lacks it); ints
#   of user nn.Modules are forced static, so that the flag matters for them, since #155099 (torch 2.8),
#   which is also when torch hints at the flag (#154867) and so when the nn_module fact appears.
# - torch.compiler.config.dynamic_sources: #147979 (Feb 2025, torch 2.7); the ``:N`` per-dim suffix is
#   #184120 (May 2026), present in torch 2.13.0's source (_dynamo/variables/builder.py, _parse_source_entry).
#   It is matched before automatic dynamic and before the nn.Module int specialization (2.13.0 builder.py,
#   is_dynamic_source), and applies to ints and tensor sizes, not floats (measured on scenarios/ with 2.13.0).
# - torch.compiler.config.unbacked_sources: the same list syntax (2.13.0's config.py); where a torch lacks
#   it, its catalog does.
# - fx.backed_size_oblivious (torch.fx.experimental._config): in torch since at least 2.7 (pytorch#150184,
#   Mar 2025); it treats backed sizes as >= 2, so sizes 0 and 1 stop being specialized.
# - automatic_dynamic_shapes_mark_as: "unbacked" marks a size that changed as unbacked (sizes 0 and 1
#   included); its choices are read from the target torch's Literal annotation (2.13.0: dynamic, unbacked).
# - specialize_float: True by default before torch 2.6 (2.4.1's catalog), False since; a flip to the value
#   in force is never planned, so the catalog decides.
# - inline_inbuilt_nn_modules: False by default in torch 2.4 (2.4.1's catalog), True from 2.5, a deprecated
#   no-op later (2.13.0's catalog says so); the catalog decides.
# - assume_static_by_default, force_parameter_static_shapes, skip_nnmodule_hook_guards: in every torch 2.x
#   catalog read here (2.4.1, 2.13.0, 2.15.0), defaults True.
# - recompile_limit: cache_size_limit before torch 2.7 (the catalog resolves either name).
FLIPS: tuple[Flip, ...] = (
    # A value baked into the graph (EQUALS_MATCH and friends).
    _row("allow_unspec_int_on_nn_module", "true", "value", "int nn_module", "dynamic_int", since=(2, 7)),
    _row("compiler.dynamic_sources", SOURCES, "value", "int named", "dynamic_source", since=(2, 7)),
    _row("specialize_float", "false", "value", "float", "dynamic_float"),
    _row("assume_static_by_default", "false", "value", "int", "all_dynamic", unless="nn_module"),
    _row("assume_static_by_default", "false", "value", "float", "all_dynamic"),
    # A tensor's size (TENSOR_MATCH) or a symbolic size guard (SHAPE_ENV).
    _row("compiler.dynamic_sources", SOURCES, "tensor", "size named", "dynamic_source", unless="size01", since=(2, 7)),
    _row("force_parameter_static_shapes", "false", "tensor", "size parameter", "parameter_shapes"),
    _row("assume_static_by_default", "false", "tensor", "size", "all_dynamic", unless="size01 parameter"),
    _row("compiler.unbacked_sources", SOURCES, "tensor", "size01 named", "unbacked_source", since=(2, 7)),
    _row("fx.backed_size_oblivious", "true", "tensor", "size01", "size_oblivious", since=(2, 7)),
    _row("automatic_dynamic_shapes_mark_as", "unbacked", "tensor", "size01", "unbacked"),
    _row("compiler.unbacked_sources", SOURCES, "dynamic_shape", "size01 named", "unbacked_source", since=(2, 7)),
    _row("fx.backed_size_oblivious", "true", "dynamic_shape", "size01", "size_oblivious", since=(2, 7)),
    _row("automatic_dynamic_shapes_mark_as", "unbacked", "dynamic_shape", "size01", "unbacked"),
    # A module's hooks changed, checked only with skip_nnmodule_hook_guards=False.
    _row("skip_nnmodule_hook_guards", "true", "container", "module_hooks", "hooks_unchecked"),
    # A module checked by id() (torch < 2.5): another instance recompiles unless modules are inlined.
    _row("inline_inbuilt_nn_modules", "true", "identity", "module_object", "inlined_modules", until=(2, 5)),
    # Calls refused at the recompile limit: a higher limit keeps them compiled, at the price of more compiles.
    _row("recompile_limit", LIMIT, "limit", "", "more_compiles", effect=KEEPS_COMPILED),
)

# At most this many configurations besides the baseline, unless --max-flips says otherwise.
MAX_FLIPS = 6

# Why a candidate flip was left out (Skipped.why).
SKIP_REASONS = ("not_in_torch", "no_op", "in_force", "not_in_version", "no_such_value", "unnamed")


@dataclass(frozen=True)
class Skipped:
    """A candidate flip left out of the runs, and why (:data:`SKIP_REASONS`); ``detail``: torch's own
    word for a no-op, or the torch version."""

    flag: str
    value: str
    why: str
    detail: str = ""


@dataclass(frozen=True)
class Candidate:
    """A flip to try for a cause: the flag and value, what it does to the cause (:data:`REMOVES` or
    :data:`KEEPS_COMPILED`) and what it costs (an id of :data:`FLIPS`)."""

    flag: str
    value: str
    effect: str
    cost: str

    @property
    def config(self) -> tuple[str, str]:
        return (self.flag, self.value)


@dataclass(frozen=True)
class Target:
    """A cause of a function of the baseline run that the plan aims at: its key (``diff.cause_key``), how
    many recompiles and recompile-limit hits it had, its facts, and the flips to try for it (table order);
    ``refused``: the calls a compiler stance refused to recompile for it (each one ran eagerly)."""

    function: FunctionSummary
    key: CauseKey
    category: str
    # The first cause of the function with this key: what the target is about.
    cause: Cause
    recompiles: int
    limit_hits: int
    facts: frozenset[str]
    candidates: tuple[Candidate, ...]
    skipped: tuple[Skipped, ...] = ()
    refused: int = 0

    @property
    def function_key(self) -> FunctionKey:
        return self.function.key


@dataclass(frozen=True)
class FlipPlan:
    """What ``compare`` without ``--flag`` runs: every target with its candidates, the configurations
    (each one flip; a flip several causes share runs once), and those left out by the cap; ``combined``:
    configurations of several flips run together, each one a fix hint writes (``combined_capped``: those
    left out by the cap)."""

    targets: tuple[Target, ...]
    flips: tuple[tuple[str, str], ...]
    capped: tuple[tuple[str, str], ...] = ()
    max_flips: int = MAX_FLIPS
    combined: tuple[tuple[tuple[str, str], ...], ...] = ()
    combined_capped: tuple[tuple[tuple[str, str], ...], ...] = ()

    @property
    def configurations(self) -> tuple[tuple[tuple[str, str], ...], ...]:
        """Every configuration to run: each single flip, then each combination."""
        return (*((f,) for f in self.flips), *self.combined)


def flip_effect(flag: str) -> tuple[str, str]:
    """(effect, cost) of a flip of ``flag`` run for another cause: its first row in :data:`FLIPS`
    (``cache_size_limit``, the recompile limit's older name, as ``recompile_limit``)."""
    name = "recompile_limit" if flag in ("cache_size_limit", "compiler.recompile_limit") else flag
    return next(((row.effect, row.cost) for row in FLIPS if row.flag == name), (REMOVES, ""))


# --- facts of a cause ------------------------------------------------------------------------------

_COMPARISON = re.compile(r"^(?P<src>.+?) (?:==|!=|is not|is) (?P<val>.+)$")
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+|inf|nan)$")
_SIZES = re.compile(r"expected (?P<expected>\d+), actual (?P<actual>\d+)")
_SIZE_DIM = re.compile(r"\.size\(\)\[(?P<dim>\d+)\]")
# A symbolic guard about sizes 0 or 1: ``2 <= x.size()[0]`` (the size was specialized away from 0 and 1),
# ``Eq(s0, 1)``, ``Ne(x.size()[0], 1)``, ``x.size()[0] == 1``.
_SIZE01 = re.compile(r"(?:^|[^\w.])2 <= |(?:Eq|Ne)\([^,]+, [01]\)|(?:==|!=) [01]$")
_HOOK_DICTS = re.compile(r"\._(?:forward|backward)(?:_pre)?_hooks\b|\._state_dict(?:_pre)?_hooks\b")
_MODULES = re.compile(r"\._modules\[[^\]]+\]$")
# Characters torch's source lists cannot carry in one entry (it splits on commas and drops spaces).
_UNLISTABLE = re.compile(r"[\s,]|^___")


def cause_facts(cause: Cause) -> frozenset[str]:
    """What the table rows are matched on, read from the cause torch reported: the guarded value's type,
    who owns it, whether it is a size and about 0/1, and the hint family of its guard kind."""
    # The guard as torch printed it: an id that normalize_guard replaced reads as a number again.
    found = failure_kind(cause.guard.replace(ID_MARK, "0")) or failure_kind(cause.text.split(" # ")[0])
    hint = found[0].hint if found else next((k.hint for k in KINDS if k.category == cause.category and k.hint), "")
    facts = {f"hint:{hint}"} if hint else set()
    source = as_source(cause.source) if cause.source else ""
    if source and not _UNLISTABLE.search(source):
        facts.add("named")
    comparison = _COMPARISON.match(cause.guard)
    if cause.category == "value" and comparison:
        facts |= _value_type(comparison["val"].strip())
        owner = source.rpartition(".")[0]
        if cause.torch_hint == "nn_module_int" or _MODULES.search(owner):
            facts.add("nn_module")
    if found and found[0].name == "TENSOR_MATCH" and (found[1].groupdict().get("what") or "") == "size":
        facts.add("size")
        sizes = _SIZES.search(cause.text)
        if sizes and {sizes["expected"], sizes["actual"]} & {"0", "1"}:
            facts.add("size01")
    if cause.category == "dynamic_shape":
        facts.add("size")
        if _SIZE01.search(cause.guard):
            facts.add("size01")
    if "._parameters[" in source:
        facts.add("parameter")
    if _HOOK_DICTS.search(source):
        facts.add("module_hooks")
    if cause.category == "identity" and source and ("." not in source or _MODULES.search(source)):
        facts.add("module_object")
    return frozenset(facts)


def _value_type(literal: str) -> set[str]:
    if _INT.match(literal):
        return {"int"}
    if _FLOAT.match(literal):
        return {"float"}
    return set()


def cause_dim(cause: Cause) -> int | None:
    """The dimension of the size a cause is about (``at index 1``, ``x.size()[1]``), or None."""
    found = failure_kind(cause.text.split(" # ")[0])
    dim = found[1].groupdict().get("dim") if found else None
    if dim is None:
        m = _SIZE_DIM.search(cause.guard)
        dim = m["dim"] if m else None
    return int(dim) if dim is not None else None


def _size_source(cause: Cause) -> str:
    """The tensor a size cause is about, as torch names it (``L['x']``)."""
    src = cause.source or (sized_source(cause.guard) if cause.category == "dynamic_shape" else "")
    return as_source(src) if src else ""


# --- the plan --------------------------------------------------------------------------------------


def torch_version_tuple(version: str | None) -> tuple[int, int] | None:
    """``2.13.0+cpu`` -> (2, 13); None when it is not a version."""
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    return (int(m[1]), int(m[2])) if m else None


def _sources_value(cause: Cause, also: Iterable[Cause], version: tuple[int, int] | None) -> str:
    """``L['x']:0,L['y']``: the cause's object (with its dim where this torch takes ``:N``, 2.13+), then
    the objects that changed with it against the same cache entry (same category), which would recompile
    the code just as well if they stayed static. ``""`` when torch could not be told the cause's name."""
    main = _size_source(cause) if cause.category in ("tensor", "dynamic_shape") else as_source(cause.source)
    if not main or _UNLISTABLE.search(main):
        return ""
    dim = cause_dim(cause) if cause.category in ("tensor", "dynamic_shape") else None
    entries = [f"{main}:{dim}" if dim is not None and version is not None and version >= (2, 13) else main]
    for other in also:
        src = _size_source(other) if other.category in ("tensor", "dynamic_shape") else as_source(other.source)
        related = other.category == cause.category or {other.category, cause.category} <= {"tensor", "dynamic_shape"}
        if related and src and not _UNLISTABLE.search(src) and src != main and src not in entries:
            entries.append(src)
    return ",".join(entries)


def _limit_value(f: FunctionSummary, catalog: Catalog) -> str:
    """A recompile limit that keeps this function's calls compiled: twice the one it ran with, 64 at least."""
    in_force = f.recompile_limit or next((h.value for h in f.limit_hits if h.value), None)
    if in_force is None:
        flag = catalog.flags.get("recompile_limit") or catalog.flags.get("cache_size_limit")
        in_force = flag.value if flag is not None and isinstance(flag.value, int) else DEFAULT_RECOMPILE_LIMIT
    return str(max(RAISED_LIMIT, 2 * int(in_force)))


def _limit_flag(catalog: Catalog) -> str:
    return "recompile_limit" if "recompile_limit" in catalog.flags else "cache_size_limit"


def _format(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _check(row: Flip, flag_name: str, value: str, catalog: Catalog, version: tuple[int, int] | None) -> Skipped | None:
    """Why this candidate of a table row is not run in the target torch, or None when it is."""
    found = _unavailable(flag_name, value, catalog)
    if found is not None:
        return found
    if version is not None and (row.since and version < row.since or row.until and version >= row.until):
        return Skipped(flag_name, value, "not_in_version", catalog.torch_version)
    if not value:
        return Skipped(flag_name, value, "unnamed")
    target = catalog.target(catalog.flags[flag_name])
    if target.choices_only and value not in [_format(c) for c in target.choices]:
        return Skipped(flag_name, value, "no_such_value", catalog.torch_version)
    return _in_force(flag_name, value, catalog)


def _hinted_check(flag_name: str, value: str, catalog: Catalog) -> Skipped | None:
    """Why a hint's own flip is not run in the target torch (the hint knows its torch by version), or None."""
    return _unavailable(flag_name, value, catalog) or _in_force(flag_name, value, catalog)


def _unavailable(flag_name: str, value: str, catalog: Catalog) -> Skipped | None:
    """The target torch has no such flag, or it does nothing there."""
    flag = catalog.flags.get(flag_name)
    if flag is None:
        return Skipped(flag_name, value, "not_in_torch", catalog.torch_version)
    reason = flag.no_op_reason() or catalog.target(flag).no_op_reason()
    return Skipped(flag_name, value, "no_op", reason) if reason else None


def _in_force(flag_name: str, value: str, catalog: Catalog) -> Skipped | None:
    """The value is the one in force: nothing to flip."""
    target = catalog.target(catalog.flags[flag_name])
    return Skipped(flag_name, value, "in_force") if _format(target.value) == value else None


def _groups(run: Run) -> list[tuple[FunctionSummary, Cause, int, int, list[Cause], int]]:
    """(function, decisive cause, recompiles, limit hits, what else changed, calls a stance refused) per
    cause key of each function: the recompiles it had, the calls refused at the limit whose last reason it
    was, and the calls a compiler stance refused to recompile for it (a flip that lets an entry take them
    answers them as it answers a recompile)."""
    found: dict[tuple[FunctionKey, CauseKey], list] = {}
    for f in run.functions:
        for event in f.recompile_events:
            if not event.causes:
                continue
            entry = found.setdefault((f.key, cause_key(event.causes[0])), [f, event.causes[0], 0, 0, [], 0])
            entry[2] += 1
            entry[4] += [c for c in event.also if c not in entry[4]]
        for hit in f.limit_hits:
            if hit.cause is not None:
                entry = found.setdefault((f.key, cause_key(hit.cause)), [f, hit.cause, 0, 0, [], 0])
                entry[3] += 1
        for refusal in f.refusals:
            if refusal.cause is not None:
                entry = found.setdefault((f.key, cause_key(refusal.cause)), [f, refusal.cause, 0, 0, [], 0])
                entry[5] += refusal.calls
    return [tuple(v) for v in found.values()]  # type: ignore[misc]


def plan_flips(
    catalog: Catalog,
    baseline: Run,
    max_flips: int = MAX_FLIPS,
    hinted: Mapping[tuple[FunctionKey, CauseKey], tuple[tuple[str, str], ...]] | None = None,
    combined: Iterable[tuple[tuple[str, str], ...]] = (),
) -> FlipPlan:
    """Each cause of the baseline (most recompiles and limit hits first) with the flips that answer it in the
    target torch, and the configurations to run: one per distinct flip, the first candidate of every cause
    before the second of any, at most ``max_flips``. ``hinted``: per cause, the flips its fix hint names
    (``verdicts.hinted_flips``): they come first, so that a hint is measured as it is written; then the
    rows of :data:`FLIPS`. ``combined``: the configurations of several settings the hints write
    (``verdicts.hinted_combinations``): planned before any single flip, each taking one run of the cap, so that
    such a hint is measured as it is written."""
    version = torch_version_tuple(catalog.torch_version)
    targets = []
    for f, cause, recompiles, hits, also, refused in _groups(baseline):
        facts = cause_facts(cause) | ({"limit"} if hits else set())
        candidates: list[Candidate] = []
        skipped: list[Skipped] = []
        for flag_name, value in (hinted or {}).get((f.key, cause_key(cause)), ()):
            why = _hinted_check(flag_name, value, catalog)
            if why is not None:
                skipped.append(why)
            elif (flag_name, value) not in [c.config for c in candidates]:
                candidates.append(Candidate(flag_name, value, *flip_effect(flag_name)))
        for row in FLIPS:
            answers = row.answers == "limit" and hits or f"hint:{row.answers}" in facts
            if not answers or not row.needs <= facts or row.unless & facts:
                continue
            flag_name = _limit_flag(catalog) if row.value == LIMIT else row.flag
            value = row.value
            if row.value == LIMIT:
                value = _limit_value(f, catalog)
            elif row.value == SOURCES:
                value = _sources_value(cause, also, version)
            why = _check(row, flag_name, value, catalog, version)
            if why is not None:
                skipped.append(why)
            elif (flag_name, value) not in [c.config for c in candidates]:
                candidates.append(Candidate(flag_name, value, row.effect, row.cost))
        key = cause_key(cause)
        targets.append(
            Target(
                f, key, cause.category, cause, recompiles, hits, facts, tuple(candidates), tuple(dict.fromkeys(skipped)), refused
            )
        )
    targets.sort(key=lambda t: (-(t.recompiles + t.limit_hits + t.refused), str(t.function_key), t.key))
    wanted: list[tuple[str, str]] = []
    for rank in range(max((len(t.candidates) for t in targets), default=0)):
        for t in targets:
            if rank < len(t.candidates) and t.candidates[rank].config not in wanted:
                wanted.append(t.candidates[rank].config)
    combos = list(dict.fromkeys(c for c in combined if len(c) > 1 and all(_hinted_check(f, v, catalog) is None for f, v in c)))
    run_combos = combos[:max_flips]
    budget = max_flips - len(run_combos)
    return FlipPlan(
        tuple(targets), tuple(wanted[:budget]), tuple(wanted[budget:]), max_flips, tuple(run_combos), tuple(combos[max_flips:])
    )
