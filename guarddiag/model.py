"""The run record: frozen dataclasses that every later stage reads.

Data flows one way: log lines -> events (``guarddiag.logparse``) -> this model
(``guarddiag.build``) -> renderers, diff and gates. Nothing here parses text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from guarddiag.guardkinds import SHAPE_FORM_NAMES, category
from guarddiag.ids import MAIN_PROCESS, CompileId, FrameId, FunctionKey, Process

SCHEMA = "guarddiag.run/2"

@dataclass(frozen=True)
class Guard:
    """One guard from a guard listing: its kind, the object it guards and its expression."""

    kind: str
    source: str
    expr: str
    location: str = ""
    # A counting parser's guard keeps its comment unread (``code  # file:line in fn``) instead of a location.
    comment: str = ""


@dataclass(frozen=True)
class DictKeys:
    """The keys of a dict whose keys a cause is about, each as torch prints it (``'aux'``), in order, as the
    guard listings show them: in the cache entry (``before``) and in the call that missed it (``after``).
    None where no listing tells: a call refused at the recompile limit has none, nor has a compile whose
    listing was not in the log. ``ordered`` is False where torch guarded the key set only (torch < 2.2)."""

    before: tuple[str, ...] | None = None
    after: tuple[str, ...] | None = None
    ordered: bool = True


# What a Source's ``role`` can be: the compiled frame itself (no object), a name of its own code
# (``argument``, ``closure``, ``local``), a global of its module, a global of a module torch imported for
# the frame (``module_global``, ``module``), torch's own internals, a value a graph break left on the stack,
# and an expression whose root is no name.
SOURCE_ROLES = ("frame", "argument", "closure", "local", "global", "module_global", "module", "torch", "stack", "expression")


@dataclass(frozen=True)
class Source:
    """The object a guard concerns, as facts: its ``root`` name, the ``role`` of that name
    (:data:`SOURCE_ROLES`), the attribute or index ``path`` below it (``.layer_idx``, ``[0]``), and where
    the root is no plain name: the ``module`` of an imported global, the user's expression a stack slot
    ``held`` (``""``: not known) and the ``line`` of the graph break that left it."""

    root: str = ""
    role: str = "frame"
    path: str = ""
    module: str = ""
    held: str = ""
    line: int | None = None

    def __post_init__(self) -> None:
        if self.role not in SOURCE_ROLES:
            raise ValueError(f"source role {self.role!r} is not one of {', '.join(SOURCE_ROLES)}"[:200])


@dataclass(frozen=True)
class Inferred:
    """A cause read from two guard listings rather than from torch's failure text: the guard's expression in
    the entry (``before``) and in the call (``after``), and the kind the listing gave it (``""``: another key
    list of a dict, whatever its kind)."""

    before: str
    after: str
    kind: str = ""


@dataclass(frozen=True)
class CauseIdentity:
    """What makes two causes the same cause, whatever their words: the guard kind, the guarded object, the
    property checked and the dim (reports, divergence and hints group by it)."""

    kind: str
    category: str
    guarded: Source | None
    aliased: tuple[str, ...]
    checked: str
    dim: int | None
    condition: str
    known: bool
    reset: bool


@dataclass(frozen=True)
class Cause:
    """Why a cache entry rejected the call: one failing guard, classified, as facts.

    ``category`` is a :class:`~guarddiag.guardkinds.Category` or its value; it is kept as the plain
    value (what records store), and anything else is a ValueError. ``kind``: the row of
    :mod:`guarddiag.guardkinds` that read it (``""``: no row). ``source``: torch's name of the object;
    ``guarded``: the same object as facts (None: the guard names none). ``text``: torch's own failure text
    (``""`` where torch gave none). ``known``: False where the log does not show why (no reason, no listing
    to compare); ``reset``: compiled again after torch's cache was reset; ``inferred``: read from two guard
    listings. render/words.py says all of it in words."""

    category: str
    source: str
    guard: str
    text: str
    kind: str = ""
    guarded: Source | None = None
    # Objects a guard found aliased (category aliasing), by their readable names, in torch's order.
    aliased: tuple[str, ...] = ()
    # The property the guard checks: a tensor's ``size``/``dtype``..., a piece of global state (``grad mode``).
    checked: str = ""
    # The tensor dim the guard checks (one tensor's dims change independently: each is its own cause).
    dim: int | None = None
    known: bool = True
    reset: bool = False
    inferred: Inferred | None = None
    # The cache entry whose guard failed, as torch names it (``0/1``: no process).
    cache_entry: CompileId | None = None
    # The user's line behind the guard: ``model.py:21 in forward`` and its code (the innermost frame of the
    # user's code in torch's stack of the guard, else torch's ``#`` comment when that line is the user's);
    # empty when the log does not show it.
    location: str = ""
    code: str = ""
    # torch's own hint on the guard, by id (guardkinds.TORCH_HINTS): ``nn_module_int``, an int read from an nn.Module.
    torch_hint: str = ""
    # The innermost line torch names for the guard when it is not the user's (torch's own code, a library's,
    # ``nn/modules/container.py:555 in __getitem__``) and the user's line is not in the log; else empty.
    inner_location: str = ""
    inner_code: str = ""
    # A symbolic-size guard (category dynamic_shape): its form, a name of guardkinds.SHAPE_FORMS
    # (``divisibility``, ``size_0_1``, ``relation``...), and its condition as the user would write it
    # (``x.size(1) % 8 == 0``); ``""`` for every other cause.
    shape: str = ""
    condition: str = ""
    # A change of a dict's keys (category container): what they were in the entry and in the call.
    keys: DictKeys | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", category(self.category).value)
        if self.shape and self.shape not in SHAPE_FORM_NAMES:
            raise ValueError(f"shape {self.shape!r} is not one of {', '.join(SHAPE_FORM_NAMES)}"[:200])

    @property
    def key(self) -> CauseIdentity:
        """The cause's identity: equal for the same guard kind on the same object, property and dim."""
        return CauseIdentity(
            self.kind, self.category, self.guarded, self.aliased, self.checked, self.dim, self.condition, self.known, self.reset
        )


@dataclass(frozen=True)
class RecompileEvent:
    """One recompile of a function; ``logged`` is False when torch did not announce it.

    ``causes``: one per cache entry torch printed, the decisive one first: the cause against the entry
    that would otherwise have matched (the one with the fewest pinned values changed; torch prints the
    newest entry first, whose reason is often not the change that matters). ``also``: what else
    changed against that entry, read from the guard listings."""

    compile_id: CompileId
    logged: bool
    causes: tuple[Cause, ...]
    also: tuple[Cause, ...] = ()


# What torch did with a call refused at the recompile limit (LimitHit.outcome).
LIMIT_OUTCOMES = ("eager", "raised", "compiled_again")


@dataclass(frozen=True)
class LimitHit:
    """A recompile-limit warning: torch refused to compile one more variant of the function.

    ``outcome``: ``eager`` (it runs the function without compiling from here on), ``raised``
    (``fail_on_recompile_limit_hit`` or ``fullgraph=True``: the call raised FailOnRecompileLimitHit),
    ``compiled_again`` (a later call compiled it again: the limit was raised, its cache reset, or an
    isolated region of its own). ``cause``: ``last_reason`` classified like a recompile's cause.
    ``compile_id``: the call refused, where the log names it; else its process alone (``rank1:``, a
    :class:`~guarddiag.ids.FrameId` without frame) or None (the main process)."""

    compile_id: CompileId | FrameId | None
    limit: str
    value: int | None
    last_reason: str
    outcome: str = "eager"
    cause: Cause | None = None


# Compiler stances (torch.compiler.set_stance) that refuse to recompile: Refusal.stance and StanceUse.stance.
# ``skip_guard_eval_unsafe`` is a stance's option: calls under it check only the guards that tell cache
# entries apart, so what they would have recompiled cannot be counted (StanceUse.counted is False).
REFUSING_STANCES = ("eager_on_recompile", "fail_on_recompile", "skip_guard_eval_unsafe")


@dataclass(frozen=True)
class Refusal:
    """Calls of a function that a compiler stance refused to recompile, alike in what failed against
    its cache entries: ``eager_on_recompile`` ran them eagerly, ``fail_on_recompile`` made them raise
    RuntimeError (a script that catches it runs the call its own way). ``calls``: how many;
    ``entries``: the cache entries the calls were checked against; ``reasons``: torch's failure reason
    against each entry (``0/1: ...``, entry order; empty: this torch gives none without logging a
    recompile); ``cause``: the one that matters, classified like a recompile's (None: not known)."""

    stance: str
    calls: int
    entries: int = 0
    reasons: tuple[str, ...] = ()
    cause: Cause | None = None


@dataclass(frozen=True)
class StanceUse:
    """A compiler stance that can refuse to recompile, in force in a process of the run (``process``:
    the script's own by default), and whether guarddiag counted the calls it refused there:
    not for ``skip_guard_eval_unsafe``, nor for ``eager_on_recompile`` on a torch before 2.7."""

    stance: str
    counted: bool
    process: Process = MAIN_PROCESS


# How a compile attempt that installed no code ended (FailedCompile.kind).
FAILED_KINDS = ("error", "skipped", "no_code")


@dataclass(frozen=True)
class FailedCompile:
    """A compile attempt that installed no code: ``error`` (torch raised; ``reason`` is its
    exception), ``skipped`` (Dynamo found nothing to compile and runs the frame eagerly), or
    ``no_code`` (the log shows the attempt but no guards for it, and nothing says why)."""

    compile_id: CompileId
    kind: str
    reason: str = ""


@dataclass(frozen=True)
class GraphBreak:
    """A graph break inside a compiled function; ``compile_id`` as a :class:`LimitHit`'s."""

    compile_id: CompileId | FrameId | None
    location: str
    reason: str


@dataclass(frozen=True)
class CompiledFor:
    """What the user compiled when torch compiled a wrapper frame (see guarddiag/wrapped.py): a
    ``function`` (``sgd_momentum`` in ``train.py``), a ``method`` (``GPT2LMHeadModel.forward``) or
    a ``module`` (``Sequential``: a compiled module's call)."""

    name: str
    file: str = ""
    kind: str = "function"


@dataclass(frozen=True)
class StackSlot:
    """A value a graph break left on the stack, which torch passes to the resume function as ``name``
    (``___stack0``): ``expression`` is the user's code that computed it (``self.block(x)``), ``""`` when
    the source does not tell (several operations on the line could have broken, a loop or ``with`` around)."""

    name: str
    expression: str = ""


@dataclass(frozen=True)
class Resume:
    """A resume function torch made after a graph break (``torch_dynamo_resume_in_train_step_at_19``,
    ``<resume in train_step>``): the user's ``function`` it continues, the ``line`` of the graph break,
    and the stack slots its guards name."""

    function: str
    line: int | None
    slots: tuple[StackSlot, ...] = ()


@dataclass(frozen=True)
class DynamicDims:
    """A tensor some compile of a function treats as dynamic in these dims (automatic dynamic after a
    size changed, or mark_dynamic): a new size there reuses that entry (sizes 0 and 1 excepted). No
    dims: a number (int or float) whose value an earlier compile pinned and a later one only checks
    by type (automatic dynamic made it symbolic): a new value reuses that entry."""

    source: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class TorchMetrics:
    """torch's own figures for one compile attempt of a function (its CompilationMetrics), each None where
    the torch that ran kept none (never 0 for not known): ``recompile_reason``, the first failing guard torch
    found against the newest cache entry (``0/1: ...``, torch >= 2.7; a ``User stack trace:`` under it from
    2.11); ``guard_count`` and ``guard_latency_us``, the guards of the entry the attempt installed and the
    microseconds torch measured one check of them to take; ``cache_size``, the function's cache entries when
    the attempt began, ``accumulated_cache_size`` those of every frame of its code; ``user_contexts``, what
    the script's recompile-context hooks returned (torch >= 2.9); ``graph_breaks``, the attempt's."""

    compile_id: CompileId | None
    recompile_reason: str | None = None
    guard_count: int | None = None
    guard_latency_us: float | None = None
    cache_size: int | None = None
    accumulated_cache_size: int | None = None
    user_contexts: tuple[str, ...] | None = None
    graph_breaks: int | None = None


@dataclass(frozen=True)
class GuardOrigin:
    """Where many of a cache entry's guards come from: ``source``, an object of the frame as torch names it
    (``L['self']._modules['layers']``; "" for the frame as a whole: grad mode, global state, the default
    device), and the leaf guards under it. ``members``: the items of a container whose guards these are
    (``self.layers``' 48 blocks), when it has several; ``rest``: only the object's guards outside the
    origins listed before it (``self`` apart from ``self.layers``)."""

    source: str
    guards: int
    members: int | None = None
    rest: bool = False


@dataclass(frozen=True)
class EntryGuards:
    """One cache entry's guards, as torch listed them when it compiled the entry: ``leaves``, the guards of its
    tree (None: a flat listing, whose guards are not a tree); ``latency_us``, torch's one measurement of a
    check of them at compile time (``Guard eval latency``, torch >= 2.6; None: not logged); ``origins``, the
    objects holding most of them, largest first."""

    compile_id: CompileId | None
    leaves: int | None
    latency_us: float | None
    origins: tuple[GuardOrigin, ...] = ()


@dataclass(frozen=True)
class GuardTime:
    """What the cache lookup (the guard check of its cache entries) of one frame of a function cost the calls
    that ran it, measured while the script ran (``run --measure-guards``; the main process only): ``calls`` that
    ran its compiled code, ``misses`` (lookups that checked its entries, found none and compiled the next one:
    its recompiles; a frame's first compile checks nothing), ``timed`` lookups that found an entry, and their
    ``median_us``, ``p10_us``, ``p90_us``, ``max_us`` and ``total_us`` (None when none was timed)."""

    frame: FrameId
    calls: int
    misses: int
    timed: int
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None
    max_us: float | None = None
    total_us: float | None = None


@dataclass(frozen=True)
class FunctionSummary:
    """All that happened to one compiled code object (matched across runs by name/file/line)."""

    name: str
    file: str
    line: int | None
    frame_ids: tuple[FrameId, ...]
    compiles: int
    recompile_events: tuple[RecompileEvent, ...]
    limit_hits: tuple[LimitHit, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    # Attempts counted in ``compiles`` that installed no code.
    failed_compiles: tuple[FailedCompile, ...] = ()
    # A wrapper's frame (torch's ``inner``): what each of its cache entries was compiled for, in order.
    compiled_for: tuple[CompiledFor, ...] = ()
    # The tensors whose sizes are dynamic in its last compile, by dim.
    dynamic_dims: tuple[DynamicDims, ...] = ()
    # The guards of each cache entry its compiles installed, as their listings showed them, in compile order.
    guard_entries: tuple[EntryGuards, ...] = ()
    # Seconds torch spent compiling it (every attempt, failed ones too), and of those the seconds in
    # compiles after the first; None when torch's record of times is not there (a parsed log).
    compile_s: float | None = None
    recompile_s: float | None = None
    # torch's recompile limit in force at its last compile, as torch's record says (None: not known).
    recompile_limit: int | None = None
    # Distinct code objects with this name, file and first line (exec'd code, a notebook cell run again,
    # generated methods): torch compiles and caches each on its own, so each one's first compile is
    # no recompile.
    code_objects: int = 1
    # A resume function after a graph break: the user's function and line it continues from (None: not one).
    resume: Resume | None = None
    # Calls a compiler stance refused to recompile (a run's child counts them; a log does not show them).
    refusals: tuple[Refusal, ...] = ()
    # Whose code called it when it compiled: installed packages by name (``transformers`` for generate()),
    # ``""`` for the user's own code, first seen first; empty when not known (a parsed log, an older record).
    callers: tuple[str, ...] = ()
    # torch's own figures for each compile attempt, in torch's order (a call refused at the limit is none);
    # empty where torch's record of them is not there (a parsed log, a torch or a record that kept none).
    torch_metrics: tuple[TorchMetrics, ...] = ()
    # What its cache lookup cost each call, per frame, measured as the script ran (run --measure-guards);
    # empty where not measured (see Run.guards_measured) or where no call ran its compiled code.
    guard_times: tuple[GuardTime, ...] = ()

    @property
    def recompiles(self) -> int:
        """Compiles after each code object's first, whether torch announced them or not."""
        return max(self.compiles - self.code_objects, 0)

    @property
    def limit_hit(self) -> bool:
        return bool(self.limit_hits)

    @property
    def refused_calls(self) -> int:
        """Calls a compiler stance refused to recompile (run eagerly, or raised)."""
        return sum(r.calls for r in self.refusals)

    @property
    def process(self) -> Process:
        """The process it was compiled in: ``rank1`` (torchrun), ``child1`` (a process the script started,
        numbered in start order), ``local1``, ``log2``, ``L/rank1`` (the labels of :mod:`guarddiag.ids`) or
        the main process; the process whose log it is where a line of it named another (``child1:rank1``)."""
        return self.frame_ids[0].process.outer if self.frame_ids else MAIN_PROCESS

    @property
    def key(self) -> FunctionKey:
        """The stable identity used to match this function across runs (rank included for torchrun logs)."""
        return FunctionKey(self.process, self.name, self.file, self.line)


@dataclass(frozen=True)
class ParseStats:
    """What the parser read and what it could not understand."""

    lines: int = 0
    torch_lines: int = 0
    unrecognized: int = 0
    unrecognized_samples: tuple[str, ...] = ()
    unidentified_frames: tuple[FrameId, ...] = ()
    # Read as a paste (no framed torch line): how many torch messages were recognised; None for a log.
    paste_messages: int | None = None
    # Read from a TORCH_TRACE (torch's structured records, not its text log): how many records; None for a log.
    trace_records: int | None = None
    # What the TORCH_TRACE's torch version does not record (TRACE_GAPS), so the counts cannot show it.
    trace_gaps: tuple[str, ...] = ()


# Kinds of module hooks guarddiag watches (LateHook.kind): nn.Module.register_<kind>_hook.
HOOK_KINDS = ("forward", "forward_pre", "full_backward", "full_backward_pre")


@dataclass(frozen=True)
class LateHook:
    """A hook registered on a module given to torch.compile (or a submodule of it) after torch had
    compiled something, and what followed: ``calls`` (``grad_calls``: with grad enabled) of the
    compiled module after the registration, ``ran`` (the hook's eager runs) and ``traced`` (times
    Dynamo compiled it into a graph, which then runs it)."""

    kind: str
    module: str
    path: str
    compiled: str
    file: str
    line: int | None
    calls: int
    grad_calls: int
    ran: int
    traced: int


# What a TORCH_TRACE may not record (ParseStats.trace_gaps): ``limit_refusals``, the calls refused at a recompile
# limit (torch < 2.5 writes nothing of them).
TRACE_GAPS = ("limit_refusals",)
# How several processes' logs were read (Job.read_as): the run folder of a job guarddiag ran, a
# torchrun --log-dir, per-rank files, files read as pieces of one log, records of one job's nodes,
# records of several jobs (a CI matrix).
JOB_READS = ("run", "log_dir", "per_rank", "pieces", "nodes", "jobs", "trace")
# How a process got its label (JobProcess.named_by): the RANK its launcher gave it (a run), its start
# order among the run's other processes (``childN``), a [rankN]: prefix in its log, its local-rank
# directory (global rank not shown), its place on the command line (no rank shown), a merged record,
# the rank in its TORCH_TRACE file's name.
NAMED_BY = ("environment", "started", "prefix", "directory", "position", "record", "file")


@dataclass(frozen=True)
class JobProcess:
    """One process of a distributed job: the label its functions carry (``rank1``, ``child2``,
    ``local0``, ``node_a/local0``, ``py311/rank0``; see :mod:`guarddiag.ids`), what is known of its
    ranks, where its log came from. ``node``: the record it came from in a merge (None: not known).

    For a job guarddiag ran, the rest is what its launcher told the process (environment variables
    in brackets): ``rank`` (RANK), ``local_rank`` (LOCAL_RANK), ``node_rank`` its node's rank
    (GROUP_RANK), ``world_size`` (WORLD_SIZE), ``host`` the node's host name, ``run_id``
    (TORCHELASTIC_RUN_ID), ``restart`` (TORCHELASTIC_RESTART_COUNT), and ``torch_compiles`` the
    compiles torch itself counted in the process, to check its log against (None: not known)."""

    process: Process
    rank: int | None
    local_rank: int | None
    named_by: str
    logs: tuple[str, ...]
    node: str | None = None
    node_rank: int | None = None
    world_size: int | None = None
    host: str = ""
    run_id: str = ""
    restart: int | None = None
    torch_compiles: int | None = None


@dataclass(frozen=True)
class JobRecord:
    """A record joined by ``guarddiag merge``: its label (a node, or one job of a CI matrix) and what it ran."""

    label: str
    path: str
    torch_version: str | None
    status: str
    script: str | None = None


@dataclass(frozen=True)
class Job:
    """How a run's processes were read from several logs or records: ``read_as`` (:data:`JOB_READS`),
    the processes, the records merged (``merge``) and torchrun attempts not read (an earlier
    ``attempt_<n>`` of a restarted job)."""

    read_as: str
    processes: tuple[JobProcess, ...] = ()
    records: tuple[JobRecord, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unobserved:
    """A Python process of a run where guarddiag's start-up hook did not run: its compiles are not counted.

    ``reason`` says why, as far as its command line and the environment it was started with tell:
    ``isolated`` (``-I``), ``ignore_environment`` (``-E``), ``no_site`` (``-S``), ``no_run_mark`` (an
    environment without guarddiag's variables), ``pythonpath`` (a PYTHONPATH that dropped the hook's
    folder), ``other_run`` (another run's variables), ``guarddiag`` (the script ran guarddiag itself:
    that run counts it), ``""`` (not known). ``torch``: it loaded torch (None: not known, an old record)."""

    argv: str
    pid: int | None = None
    reason: str = ""
    torch: bool | None = None


def uncounted(run: Run) -> tuple[Unobserved, ...]:
    """The unobserved processes of a run that may have compiled: they loaded torch (or it is not known),
    and no other guarddiag run counted them."""
    return tuple(u for u in run.unobserved if u.torch is not False and u.reason != "guarddiag")


@dataclass(frozen=True)
class Run:
    """One run record: a script run under guarddiag, or a parsed log."""

    functions: tuple[FunctionSummary, ...]
    parse: ParseStats
    torch_version: str | None = None
    exit_code: int | None = None
    source: str = "parse"
    status: str = "ok"
    script: str | None = None
    argv: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)
    config: dict[str, object] = field(default_factory=dict)
    # What torch warned when the flags were set (a deprecated flag that does nothing), one line each.
    flag_notes: tuple[str, ...] = ()
    log_path: str | None = None
    duration_s: float | None = None
    # The script's uncaught exception (``Type: first line``) and the --flag entries its message names.
    error: str | None = None
    error_flags: tuple[str, ...] = ()
    # Compiles torch itself recorded in the script's process (None: not known), to check the log against.
    torch_compiles: int | None = None
    # Python processes of the run where guarddiag's start-up hook did not run (sampled from /proc).
    unobserved: tuple[Unobserved, ...] = ()
    # The script removed its run folder: guarddiag re-created it from the log it held open, and the
    # torch version and the script's exception (written there at the end) are not known.
    folder_recreated: bool = False
    # Hooks the script added to compiled modules after torch compiled (child/_site/_guarddiag_hooks.py).
    late_hooks: tuple[LateHook, ...] = ()
    # A distributed job: the ranks of a torchrun job the script ran (``run``), or a job read from several
    # logs (``parse`` of a log dir or per-rank files) or records (``merge``).
    job: Job | None = None
    # The module run as ``python -m MODULE`` (``script`` is None then).
    module: str | None = None
    # Compiler stances that can refuse to recompile, as the run's processes used them (a log does not say).
    stances: tuple[StanceUse, ...] = ()
    # The TORCH_TRACE folder guarddiag had torch write for the run (``run --trace``; None: none kept).
    trace_path: str | None = None
    # Each call's cache lookup measured in the main process (run --measure-guards): None, not asked; True,
    # measured (FunctionSummary.guard_times); False, asked but nothing measured (guards_unmeasured says why).
    guards_measured: bool | None = None
    # Why the measurement failed, as the profiler's error said (None: no error known).
    guards_unmeasured: str | None = None
    schema: str = SCHEMA

    @property
    def compiles(self) -> int:
        return sum(f.compiles for f in self.functions)

    @property
    def recompiles(self) -> int:
        return sum(f.recompiles for f in self.functions)

    @property
    def limit_hits(self) -> int:
        return sum(len(f.limit_hits) for f in self.functions)

    @property
    def graph_breaks(self) -> int:
        return sum(len(f.graph_breaks) for f in self.functions)

    @property
    def refused_calls(self) -> int:
        return sum(f.refused_calls for f in self.functions)

    @property
    def compile_s(self) -> float | None:
        """Seconds torch spent compiling, all functions; None unless every function's time is known."""
        return _total(f.compile_s for f in self.functions)

    @property
    def recompile_s(self) -> float | None:
        """Of :attr:`compile_s`, the seconds spent in recompiles."""
        return _total(f.recompile_s for f in self.functions)


def uncounted_stances(run: Run) -> tuple[StanceUse, ...]:
    """The stances in force whose refused calls guarddiag could not count: the run's counts may miss them."""
    return tuple(dict.fromkeys(s for s in run.stances if not s.counted))


def _total(values: Iterable[float | None]) -> float | None:
    """The sum, or None when there is nothing to add or any value is not known."""
    values = list(values)
    return None if not values or any(v is None for v in values) else round(sum(values), 6)  # type: ignore[arg-type]


def compile_gaps(run: Run) -> tuple[tuple[Process, int, int], ...]:
    """Every process whose log shows fewer compiles than torch counted in it: ``(process, counted,
    seen)``, the script's own process first, then the job's processes (a run's ranks). Where
    the log lost lines, every count of that process is too low."""
    counted = [(MAIN_PROCESS, run.torch_compiles), *((p.process, p.torch_compiles) for p in (run.job.processes if run.job else ()))]
    gaps = []
    for process, count in counted:
        seen = sum(f.compiles for f in run.functions if f.process == process)
        if lost_lines(count, seen):
            gaps.append((process, count, seen))
    return tuple(gaps)


def lost_lines(torch_compiles: int | None, logged: int) -> bool:
    """torch compiled more than the log shows (``logged``): the log lost lines, and every count read from
    it is too low. Not known (False) where torch keeps no count. A run's processes (:func:`compile_gaps`)
    and the watch's block (``Watch.lost_log``) are judged by it."""
    return torch_compiles is not None and torch_compiles > logged


def report_order(f: FunctionSummary) -> tuple[int, str, str, int, Process]:
    """The order reports list functions in: the most recompiles first, then by name and place, and one
    function's processes in their order (``rank2`` before ``rank10``; the main process first)."""
    return (-f.recompiles, f.name, f.file, f.line or 0, f.process)
