"""What ``compare`` measured, kept for later reports, and the hints it verifies.

Every ``compare`` of one script in one interpreter keeps, per cause of its baseline and per flip it ran,
what the flip did (:class:`guarddiag.compare.FlipOutcome`) in ``.guarddiag/verdicts/<key>.json``: one
versioned file per script (or module), arguments, flags and torch version, written atomically and merged
with what earlier compares of the same key measured (the newest measurement of a flip wins). A later
``run`` or ``explain`` of the same script, arguments, flags and torch reads them back: a config hint
is verified (what the flip removed), shown not to work, or not verified, with the compare that verifies
it. Pure views (:func:`check_hints`, :func:`run_advice`) are separate from the file (load/keep).

Schema versions (``schema`` key):
  guarddiag.verdicts/1 -- first version: ``key`` (script, module, cwd, args, flags, torch_version) and
  ``verdicts[]`` (function, cause, subject, flip, every field of FlipOutcome, compared_at). Later key:
  ``script_sha256`` (the script's file when last compared; another content is said, its verdicts not used).
  guarddiag.verdicts/2 -- a verdict no longer holds ``subject`` (the cause in words, read by nothing: the cause
  is its key, and only ``render/`` words it). Files of version 1 are read, their subjects ignored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from guarddiag.compare import CompareReport, FlipOutcome
from guarddiag.diff import CauseKey, cause_key
from guarddiag.ids import FrameId, FunctionKey, Process
from guarddiag.model import Cause, CauseIdentity, FunctionSummary, Guard, Run
from guarddiag.shell import quote
from guarddiag.store import write_atomic

if TYPE_CHECKING:
    from guarddiag.explain.model import FixHint

SCHEMA = "guarddiag.verdicts/2"
KNOWN_SCHEMAS = (SCHEMA, "guarddiag.verdicts/1")
FOLDER = Path(".guarddiag/verdicts")

# Config hints (explain/hints.py HINTS) and the flags that carry them out: a compare of one of these
# flips verifies the hint. A hint named here is a "config hint"; every other hint is a code change.
HINT_FLAGS: dict[str, tuple[str, ...]] = {
    "allow_unspec_int_on_nn_module": ("allow_unspec_int_on_nn_module", "compiler.allow_unspec_int_on_nn_module"),
    "inline_inbuilt_nn_modules": ("inline_inbuilt_nn_modules",),
    "steers_python": ("recompile_limit", "cache_size_limit", "compiler.recompile_limit"),
}
# The value of the flip that verifies a hint, where the hint does not depend on the run (a limit does).
HINT_VALUES = {"allow_unspec_int_on_nn_module": "true", "inline_inbuilt_nn_modules": "true", "steers_python": "64"}


@dataclass(frozen=True)
class VerdictKey:
    """What a measurement holds for: the script (resolved path) or module (with the folder it ran in),
    its arguments, the flags it ran with and the torch version."""

    script: str
    module: str
    cwd: str
    args: tuple[str, ...]
    flags: tuple[tuple[str, str], ...]
    torch_version: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:24]


def key_of(run: Run) -> VerdictKey | None:
    """The key of a run of a script or module (None: a parsed log, or the torch version is not known)."""
    if run.source != "run" or not run.torch_version or not (run.script or run.module):
        return None
    if any("\x00" in w for w in (run.script or "", run.module or "", *run.argv)):
        return None  # no run has a NUL in its path or arguments: a forged record, whose verdicts there are none
    script = str(Path(run.script).resolve()) if run.script else ""
    cwd = "" if run.script else str(Path.cwd().resolve())
    return VerdictKey(script, run.module or "", cwd, tuple(run.argv), tuple(sorted(run.flags.items())), run.torch_version)


@dataclass(frozen=True)
class Verdict:
    """What one flip did to one cause of one function, measured by a compare at ``compared_at`` (UTC)."""

    function: FunctionKey
    cause: CauseKey
    outcome: FlipOutcome
    compared_at: str


@dataclass(frozen=True)
class Verdicts:
    """The verdicts kept for one key; ``ignored``: why the file kept for it is not used (:data:`IGNORED`),
    else ``""``; ``schema``: the schema that file names."""

    key: VerdictKey | None
    verdicts: tuple[Verdict, ...] = ()
    ignored: str = ""
    schema: str = ""

    def for_cause(self, function: FunctionKey, cause: CauseKey) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.function == function and v.cause == cause)


NO_VERDICTS = Verdicts(None)
# Why a verdict file is not used (Verdicts.ignored): another guarddiag's schema, not JSON, damaged fields;
# no regular file at its path (a link, a FIFO, a device, a folder), one far larger than any compare writes,
# one that cannot be opened; the script's file is not the one compared (edited since).
IGNORED = ("other_schema", "not_json", "damaged", "not_a_file", "too_large", "unreadable", "script_changed")
# A compare keeps a few hundred bytes per flip and cause: a file past this was not written by guarddiag.
MAX_BYTES = 16 * 1024 * 1024


def verdicts_of(report: CompareReport, now: str) -> tuple[Verdict, ...]:
    """Every measurement of a compare: each cause of its baseline, each single-flip configuration."""
    return tuple(
        Verdict(c.target.function_key, c.target.key, o, now)
        for c in report.causes
        for o in c.outcomes
    )


def _path(key: VerdictKey, folder: Path) -> Path:
    return folder / f"{key.digest}.json"


def load_verdicts(run: Run, folder: Path = FOLDER) -> Verdicts:
    """The verdicts kept for this run's script, arguments, flags and torch (none: not compared yet)."""
    key = key_of(run)
    if key is None:
        return NO_VERDICTS
    text, why = _read(_path(key, folder))
    if text is None:
        return Verdicts(key, (), why)  # why "": none kept, never compared
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return Verdicts(key, (), "not_json")
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema not in KNOWN_SCHEMAS:
        return Verdicts(key, (), "other_schema", str(schema))
    try:
        if _key_from(data["key"]) != key:
            return Verdicts(key)  # another key with the same digest prefix: not ours
        kept = tuple(_verdict_from(v) for v in data["verdicts"])
        compared, now = data.get("script_sha256"), script_digest(key)
        if compared is not None and now and compared != now:
            return Verdicts(key, (), "script_changed")
        return Verdicts(key, kept)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        return Verdicts(key, (), "damaged", str(schema))


def _read(path: Path) -> tuple[str | None, str]:
    """The text of the verdict file at ``path``, or None and why it is not read (:data:`IGNORED`; ``""``: there
    is none). Only a regular file is read, never through a link, without waiting on a FIFO, up to MAX_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, "not_a_file" if exc.errno == errno.ELOOP else "unreadable"
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None, "not_a_file"
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        return None, "too_large"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "not_json"


def keep_verdicts(report: CompareReport, folder: Path = FOLDER) -> None:
    """Add a compare's measurements to the file of its baseline's key (atomically; a file that cannot be
    written costs later reports their verification, not this compare its report)."""
    if not report.causes or not report.results:
        return
    key = key_of(report.results[0].run)
    if key is None:
        return
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    fresh = verdicts_of(report, now)
    kept = load_verdicts(report.results[0].run, folder)
    measured = {(v.function, v.cause, v.outcome.configs) for v in fresh}
    older = [v for v in kept.verdicts if (v.function, v.cause, v.outcome.configs) not in measured]
    doc = {
        "schema": SCHEMA,
        "key": dataclasses.asdict(key),
        "script_sha256": script_digest(key),
        "verdicts": [_verdict_to(v) for v in (*older, *fresh)],
    }
    with contextlib.suppress(OSError):
        # Whatever is at the path (a link, a FIFO) is replaced by the new file, never written through.
        write_atomic(_path(key, folder), json.dumps(doc, indent=1) + "\n", follow=False)


# A script past this size is not hashed (its measurements are used without the check).
_MAX_SCRIPT_BYTES = 64 * 1024 * 1024


def script_digest(key: VerdictKey) -> str:
    """The SHA-256 of the script's file as it is now (``""``: a module, or a file that cannot be read as a regular
    file): measurements of another content of the script are not this script's."""
    if not key.script:
        return ""
    try:
        fd = os.open(key.script, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return ""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return ""
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(_MAX_SCRIPT_BYTES + 1)
    return hashlib.sha256(data).hexdigest() if len(data) <= _MAX_SCRIPT_BYTES else ""


def function_key_dict(key: FunctionKey) -> dict[str, object]:
    """A function's key as a verdict file and the run report's advice write it: its fields, the process as text."""
    return {**key._asdict(), "process": str(key.process)}


def _verdict_to(v: Verdict) -> dict[str, object]:
    return {
        "function": function_key_dict(v.function),
        "cause": list(v.cause),
        "outcome": dataclasses.asdict(v.outcome),
        "compared_at": v.compared_at,
    }


def _verdict_from(raw: dict) -> Verdict:
    outcome = raw["outcome"]
    kinds = {f.name: f.type for f in dataclasses.fields(FlipOutcome)}
    # Every field as FlipOutcome types it: a count a number >= 0, never a bool or a string (reports do sums with them).
    bad = next((k for k, v in outcome.items() if k in kinds and k != "also" and not _typed(str(kinds[k]), v)), None)
    if bad is not None:
        raise ValueError(f"outcome.{bad}")
    also = tuple((str(flag), str(value)) for flag, value in outcome.get("also", ()))
    outcome = FlipOutcome(**{k: v for k, v in outcome.items() if k in kinds} | {"also": also})
    category, source, pattern = (str(x) for x in raw["cause"])
    function = FunctionKey(**raw["function"])
    if not all(isinstance(v, str) for v in function[:3]) or not (function.line is None or type(function.line) is int):
        raise ValueError("function")
    function = function._replace(process=Process.parse(function.process))
    return Verdict(function, (category, source, pattern), outcome, str(raw["compared_at"]))


def _typed(kind: str, value: object) -> bool:
    """Whether ``value`` read from JSON has the type a FlipOutcome field is annotated with (``int | None``)."""
    if value is None:
        return kind.endswith("| None")
    if kind.startswith("int"):
        return type(value) is int and value >= 0
    if kind.startswith("float"):
        return type(value) in (int, float)
    if kind.startswith("bool"):
        return type(value) is bool
    return kind == "str" and type(value) is str


def _key_from(raw: dict) -> VerdictKey:
    return VerdictKey(
        str(raw["script"]),
        str(raw["module"]),
        str(raw["cwd"]),
        tuple(str(a) for a in raw["args"]),
        tuple((str(k), str(v)) for k, v in raw["flags"]),
        str(raw["torch_version"]),
    )


# --- hints, verified ---------------------------------------------------------------------------------

# How a config hint stands (HintCheck.status).
VERIFIED = "verified"  # a compare of this script measured the flip removing (or keeping compiled) its cause
NO_EFFECT = "no_effect"  # a compare measured it, and it did not: not a fix here
NOT_VERIFIED = "not_verified"


@dataclass(frozen=True)
class HintCheck:
    """Where a config hint stands for this script: ``status``, the measurements behind it (one per cause
    the hint is for), and the command that verifies it (``guarddiag compare SCRIPT --flag NAME=VALUE -- ARGS``);
    ``run_flags``: the run's own --flag options, which a compare's baseline does not have (its
    measurements hold for torch's defaults, not for that run)."""

    status: str
    flag: str
    outcomes: tuple[FlipOutcome, ...]
    command: str
    run_flags: tuple[str, ...] = ()


def compare_command(run: Run | None, flip: tuple[str, str] | None = None, more: tuple[tuple[str, str], ...] = ()) -> str:
    """``guarddiag compare model.py --flag NAME=VALUE -- ARGS`` for this run (``SCRIPT`` where none is
    known); without a flip, the compare that tries every flip the causes call for; with ``more``, those
    flips too, run together (``--combined``)."""
    # compare's baseline runs with torch's defaults: a run's own --flag options are not its.
    flips = ([flip] if flip is not None else []) + list(more)
    if run is not None and any("\x00" in w for w in (run.script or "", run.module or "", *run.argv)):
        run = None  # a NUL no shell word holds (only a forged record has one): the command names no script
    options = [w for name, value in flips for w in ("--flag", f"{name}={value}")] + (["--combined"] if len(flips) > 1 else [])
    if run is not None and run.module:
        words = ["guarddiag", "compare", *options, "-m", run.module, *run.argv]
    else:
        script = run.script if run is not None and run.script else "SCRIPT"
        words = ["guarddiag", "compare", script, *options, *(["--", *run.argv] if run is not None and run.argv else [])]
    return " ".join(w if w == "SCRIPT" else quote(w) for w in words)


def _status(outcomes: Iterable[FlipOutcome]) -> str:
    # A run that did not finish (a --timeout on a busy machine) or compiled differently each repeat measured nothing.
    measured = [o for o in outcomes if o.status == "ok" and not o.unstable]
    if not measured:
        return NOT_VERIFIED
    return VERIFIED if any(o.works for o in measured) else NO_EFFECT


def cause_keys(f: FunctionSummary) -> dict[CauseIdentity, list[CauseKey]]:
    """The diff keys behind each cause (by its identity: how reports group them) of a function's recompiles, its
    limit hits and the calls a compiler stance refused it (what compare measured for them is advice too)."""
    keys: dict[CauseIdentity, list[CauseKey]] = {}
    for c in _advised_causes(f):
        found = keys.setdefault(c.key, [])
        if cause_key(c) not in found:
            found.append(cause_key(c))
    return keys


def _advised_causes(f: FunctionSummary) -> list[Cause]:
    """The decisive cause of each recompile of a function, then the causes of its limit hits and refusals."""
    causes = [e.causes[0] for e in f.recompile_events if e.causes]
    return causes + [x.cause for x in (*f.limit_hits, *f.refusals) if x.cause is not None]


def hint_check(
    hint: FixHint, causes: Iterable[CauseIdentity], f: FunctionSummary, verdicts: Verdicts, run: Run | None
) -> HintCheck | None:
    """Where a config hint for these causes (by identity) of ``f`` stands (None: a code change). Its
    flips are those of its own lines (``explain.hints.hint_configs``): a compare's measurement of exactly
    that flip verifies it; a hint of several settings is verified by the compare that runs them together,
    which its command is. A hint without lines names its flag (:data:`HINT_FLAGS`): any value of it counts."""
    from guarddiag.explain.hints import hint_configs

    configs = hint_configs(hint.lines)
    flags = tuple(name for name, _ in configs) or HINT_FLAGS.get(hint.hint, ())
    if not flags:
        return None
    keys = cause_keys(f)
    measured = (v.outcome for c in causes for k in keys.get(c, []) for v in verdicts.for_cause(f.key, k))
    if configs:
        # The configuration of exactly the hint's lines: one flip, or its several run together.
        outcomes = tuple(o for o in measured if len(o.configs) == len(configs) and set(o.configs) == set(configs))
        command = compare_command(run, configs[0], configs[1:])
    else:
        outcomes = tuple(o for o in measured if o.flag in flags)
        command = compare_command(run, (flags[0], HINT_VALUES[hint.hint]))
    run_flags = tuple(f"{k}={v}" for k, v in run.flags.items()) if run is not None else ()
    return HintCheck(_status(outcomes), flags[0], outcomes, command, run_flags)


Listings = Mapping[FrameId, Mapping[int, tuple[Guard, ...]]]


def run_hints(run: Run, listings: Listings | None) -> list[tuple[FixHint, ...]]:
    """The fix hints of each function of a run (none for one that did not recompile), one setting's lines joined
    across them (explain.hints.joined_settings)."""
    from guarddiag.explain.hints import fix_hints, joined_settings, torch_era  # a run's report needs no explain model

    listings = listings or {}
    era = torch_era(run.torch_version, (g for per in listings.values() for gs in per.values() for g in gs))
    return joined_settings([
        fix_hints(f, run.torch_version, era, listings.get(f.frame_ids[0], {}) if f.frame_ids else {}, f.graph_breaks)
        if cause_keys(f) else ()
        for f in run.functions
    ])


def hinted_flips(run: Run, listings: Listings | None) -> dict[tuple[FunctionKey, CauseKey], tuple[tuple[str, str], ...]]:
    """The flips the fix hints of a run name for each of its causes (a hint's own config line, or a choice's),
    one setting each: compare measures these before the table's others, so that the hint itself is verified."""
    from guarddiag.explain.hints import hint_configs

    found: dict[tuple[FunctionKey, CauseKey], tuple[tuple[str, str], ...]] = {}
    for f, hints in zip(run.functions, run_hints(run, listings), strict=True):
        keys = cause_keys(f)
        if not keys:
            continue
        for h in hints:
            configs = [c for lines in (h.lines, *(choice.lines for choice in h.choices)) if len(c := hint_configs(lines)) == 1]
            for cause in h.causes:
                for k in keys.get(cause.key, []):
                    found[(f.key, k)] = tuple(dict.fromkeys((*found.get((f.key, k), ()), *(c[0] for c in configs))))
    return found


def hinted_combinations(run: Run, listings: Listings | None) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The configurations of several settings the fix hints of a run write (a hint's own lines, or a choice's):
    compare runs each as one configuration, which is what verifies such a hint."""
    from guarddiag.explain.hints import fix_hints, hint_configs, torch_era

    listings = listings or {}
    era = torch_era(run.torch_version, (g for per in listings.values() for gs in per.values() for g in gs))
    found: list[tuple[tuple[str, str], ...]] = []
    for f in run.functions:
        if not cause_keys(f):
            continue
        for h in fix_hints(f, run.torch_version, era, listings.get(f.frame_ids[0], {}) if f.frame_ids else {}, f.graph_breaks):
            found += [c for lines in (h.lines, *(choice.lines for choice in h.choices)) if len(c := hint_configs(lines)) > 1]
    return tuple(dict.fromkeys(found))


def check_hints(hints: tuple[FixHint, ...], f: FunctionSummary, verdicts: Verdicts, run: Run | None) -> tuple[FixHint, ...]:
    """Each config hint with where it stands for this script (``FixHint.verification``); others as they are."""
    return tuple(
        dataclasses.replace(h, verification=check) if (check := hint_check(h, (c.key for c in h.causes), f, verdicts, run)) else h
        for h in hints
    )


# --- the advice of a run report -----------------------------------------------------------------------


@dataclass(frozen=True)
class CauseAdvice:
    """What a run report says under one cause group of a function (a cause's identity): the fix hint for
    it (None: none applies), where a config hint stands, and the flips a compare of this script measured
    removing some of it (or keeping it compiled)."""

    # The group's first cause: its identity (Cause.key) is the group's.
    cause: Cause
    hint: FixHint | None
    check: HintCheck | None
    found: tuple[FlipOutcome, ...] = ()


@dataclass(frozen=True)
class FunctionAdvice:
    """The advice for each cause group of one function."""

    function: FunctionKey
    causes: tuple[CauseAdvice, ...]


@dataclass(frozen=True)
class RunAdvice:
    """The advice of a run report: per function, per cause group; ``compared``: a compare of this script
    was found (its verdicts are used); ``ignored`` (:data:`IGNORED`) and ``ignored_schema``: why the
    verdict file kept for it is not used; ``command``: the compare (without --flag) that measures every
    flip the causes call for."""

    functions: tuple[FunctionAdvice, ...]
    compared: bool
    ignored: str = ""
    command: str = ""
    ignored_schema: str = ""

    def of(self, f: FunctionSummary) -> FunctionAdvice | None:
        return next((a for a in self.functions if a.function == f.key), None)


def run_advice(run: Run, verdicts: Verdicts, listings: Listings | None = None) -> RunAdvice:
    """The fix hint of each cause group of each function that recompiled, and what compare measured for it.
    ``listings``: each frame's guard listings by compile number (``explain.listings_of`` of the run's log),
    the facts a hint is decided from, as explain decides it; without them a hint says what it cannot tell."""
    functions = []
    for f, hints in zip(run.functions, run_hints(run, listings), strict=True):
        keys = cause_keys(f)
        if not keys:
            continue
        advice = []
        first: dict[CauseIdentity, Cause] = {}
        for c in _advised_causes(f):
            first.setdefault(c.key, c)
        for identity, cause_keys_ in keys.items():
            hint = next((h for h in hints if identity in (c.key for c in h.causes)), None)
            check = hint_check(hint, [identity], f, verdicts, run) if hint else None
            found = tuple(
                v.outcome for k in cause_keys_ for v in verdicts.for_cause(f.key, k) if v.outcome.works and not _is_hint_flip(v, check)
            )
            advice.append(CauseAdvice(first[identity], hint, check, found))
        functions.append(FunctionAdvice(f.key, tuple(advice)))
    return RunAdvice(tuple(functions), bool(verdicts.verdicts), verdicts.ignored, compare_command(run), verdicts.schema)


def _is_hint_flip(v: Verdict, check: HintCheck | None) -> bool:
    return check is not None and v.outcome in check.outcomes
