"""The committed baseline: per script and function, what compiled and why. YAML, versioned.

Functions are keyed by name, file relative to the project root, and first line: never by
frame ids or object ids. Schema versions (``schema`` key):
  guarddiag.baseline/1 -- first version (docs/ci.md). ``torch_version`` is the torch the runs were
  recorded with; null or absent (a baseline made from records that do not say) reads as not known.
  A function's ``refused_calls`` (calls a compiler stance refused to recompile) is written when above
  0; absent reads as 0. A function's ``guards`` (the most guards of a cache entry a call walks) and
  ``guard_latency_us`` (torch's compile-time check of the cheapest such entry; guardbudget.py) are written
  where the run told them; absent (a baseline written before guarddiag recorded them, a torch before 2.6,
  a log without the guards channel) reads as not known, never as 0. ``max_guards`` and
  ``max_guard_latency_us`` are budgets written by hand, kept like ``budget``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from guarddiag.errors import InputError
from guarddiag.filekinds import wrong_file
from guarddiag.guardbudget import gated_figures
from guarddiag.ids import MAIN_PROCESS, FunctionKey, Process
from guarddiag.model import FunctionSummary, Run
from guarddiag.render.escape import yaml_text
from guarddiag.store import write_atomic
from guarddiag.yamlfile import Dumper, read_yaml

BASELINE_SCHEMA = "guarddiag.baseline/1"
_SCHEMA_FAMILY = "guarddiag.baseline/"


@dataclass(frozen=True)
class BaselineFunction:
    """One function's recorded numbers; ``budget`` (max recompiles) defaults to ``recompiles``."""

    name: str
    file: str
    line: int | None
    compiles: int
    recompiles: int
    limit_hits: int
    causes: tuple[tuple[str, int], ...]
    budget: int | None = None
    # The process it ran in when not the main one (`rank1`, `child1`): the same function in two
    # processes is two entries.
    process: Process = MAIN_PROCESS
    # Calls a compiler stance refused to recompile (torch.compiler.set_stance).
    refused_calls: int = 0
    # Its guard figures (guardbudget.py), None where not known; and its hand-written guard budgets.
    guards: int | None = None
    guard_latency_us: float | None = None
    max_guards: int | None = None
    max_guard_latency_us: float | None = None

    @property
    def key(self) -> FunctionKey:
        """Its function's key (the file relative to the project root)."""
        return FunctionKey(self.process, self.name, self.file, self.line)


@dataclass(frozen=True)
class BaselineScript:
    """One script of the baseline and its functions."""

    path: str
    functions: tuple[BaselineFunction, ...]
    max_recompiles: int | None = None


@dataclass(frozen=True)
class Baseline:
    """The whole baseline file."""

    scripts: tuple[BaselineScript, ...]
    torch_version: str | None = None

    def script(self, path: str) -> BaselineScript | None:
        return next((s for s in self.scripts if s.path == path), None)


def relative_file(file: str, root: Path) -> str:
    """A function's file relative to the project root when it lies below it (portable across checkouts)."""
    if not file or file.startswith("<"):
        return file
    try:
        rel = os.path.relpath(os.path.abspath(file), os.path.abspath(root))
    except ValueError:  # another drive on Windows
        return file
    return file if rel.startswith("..") else rel.replace(os.sep, "/")


def cause_counts(f: FunctionSummary) -> tuple[tuple[str, int], ...]:
    """How many of a function's recompiles fall in each cause category (primary cause)."""
    counts = Counter(e.causes[0].category for e in f.recompile_events if e.causes)
    return tuple(sorted(counts.items()))


def from_runs(runs: dict[str, Run], root: Path, previous: Baseline | None = None) -> Baseline:
    """A baseline recording these runs (script key -> run).

    From ``previous`` it keeps the budgets and every script that was not run this time.
    """
    scripts = []
    for path, run in runs.items():
        old = previous.script(path) if previous else None
        kept = {f.key: f for f in (old.functions if old else ())}
        functions = []
        for f in sorted(run.functions, key=lambda f: (f.file, f.line or 0, f.name)):
            rel = relative_file(f.file, root)
            was = kept.get(f.key._replace(file=rel))
            figures = gated_figures(f)
            functions.append(
                BaselineFunction(
                    name=f.name,
                    file=rel,
                    line=f.line,
                    compiles=f.compiles,
                    recompiles=f.recompiles,
                    limit_hits=len(f.limit_hits),
                    causes=cause_counts(f),
                    budget=was.budget if was else None,
                    process=f.process,
                    refused_calls=f.refused_calls,
                    guards=figures.guards,
                    guard_latency_us=None if figures.latency_us is None else round(figures.latency_us, 1),
                    max_guards=was.max_guards if was else None,
                    max_guard_latency_us=was.max_guard_latency_us if was else None,
                )
            )
        scripts.append(BaselineScript(path, tuple(functions), old.max_recompiles if old else None))
    kept = tuple(s for s in (previous.scripts if previous else ()) if s.path not in runs)
    torch = next((r.torch_version for r in runs.values() if r.torch_version), None)
    return Baseline(kept + tuple(scripts), torch or (previous.torch_version if previous else None))


def to_yaml(baseline: Baseline) -> str:
    """Human-readable YAML, meant to be committed and reviewed."""
    doc = {
        "schema": BASELINE_SCHEMA,
        "torch_version": baseline.torch_version,
        "scripts": [
            {
                "path": s.path,
                **({"max_recompiles": s.max_recompiles} if s.max_recompiles is not None else {}),
                "functions": [
                    {
                        "name": f.name,
                        **({"process": str(f.process)} if f.process else {}),
                        "file": f.file,
                        "line": f.line,
                        "compiles": f.compiles,
                        "recompiles": f.recompiles,
                        "limit_hits": f.limit_hits,
                        **({"refused_calls": f.refused_calls} if f.refused_calls else {}),
                        "causes": dict(f.causes),
                        **({"budget": f.budget} if f.budget is not None else {}),
                        **({"guards": f.guards} if f.guards is not None else {}),
                        **({"guard_latency_us": f.guard_latency_us} if f.guard_latency_us is not None else {}),
                        **({"max_guards": f.max_guards} if f.max_guards is not None else {}),
                        **({"max_guard_latency_us": f.max_guard_latency_us} if f.max_guard_latency_us is not None else {}),
                    }
                    for f in s.functions
                ],
            }
            for s in baseline.scripts
        ],
    }
    header = "# guarddiag baseline: recompiles per function. Refresh with `guarddiag check --update`.\n"
    # A baseline is read in review and printed in CI logs: its names are escaped as the yaml format's.
    return header + yaml_text(doc, Dumper)


def save(baseline: Baseline, path: Path) -> None:
    """Write the baseline atomically."""
    try:
        write_atomic(path, to_yaml(baseline))
    except OSError as exc:
        raise InputError(f"{path}: cannot write the baseline ({exc.strerror}); pick a writable path") from None


def _int(value: object, where: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: expected a whole number >= 0, got {value!r}; fix the baseline or re-create it")
    return value


def _micros(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise InputError(f"{where}: expected microseconds (a number >= 0), got {value!r}; fix the baseline or re-create it")
    return float(value)


def _process(value: object, where: str) -> Process:
    try:
        return Process.parse(str(value))
    except ValueError:
        raise InputError(
            f"{where}: expected a process label (rank1, child1, L/rank1), got {value!r}; fix the baseline or re-create it"
        ) from None


def load(path: Path) -> Baseline:
    """Read and validate a baseline; every problem is one line naming the place."""
    try:
        doc = read_yaml(path, "baseline", "re-create it with `guarddiag baseline`")
    except FileNotFoundError:
        raise InputError(f"{path}: no baseline; create one with `guarddiag baseline SCRIPT... -o {path}`") from None
    except InputError as exc:  # not YAML: a JUnit report or a run report given as the baseline is named as such
        raise InputError(wrong_file(path, "baseline") or str(exc)) from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    wrong = None if isinstance(schema, str) and schema.startswith(_SCHEMA_FAMILY) else wrong_file(path, "baseline")
    if wrong:
        raise InputError(wrong)
    if isinstance(schema, str) and schema.startswith(_SCHEMA_FAMILY) and schema != BASELINE_SCHEMA:
        raise InputError(
            f"{path}: baseline schema {schema!r} is not one this guarddiag reads ({BASELINE_SCHEMA}); "
            "upgrade guarddiag or re-create the baseline with `guarddiag baseline`"
        )
    if schema != BASELINE_SCHEMA:
        raise InputError(f"{path}: baseline schema {schema!r} is not {BASELINE_SCHEMA!r}; re-create it with `guarddiag baseline`")
    scripts_raw = doc.get("scripts")
    if not isinstance(scripts_raw, list):
        raise InputError(f"{path}: 'scripts' must be a list; re-create the baseline with `guarddiag baseline`")
    scripts = []
    for i, s in enumerate(scripts_raw):
        where = f"{path}: scripts[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("path"), str) or not isinstance(s.get("functions", []), list):
            raise InputError(f"{where}: needs 'path' (string) and 'functions' (list)")
        functions = []
        for j, f in enumerate(s.get("functions", [])):
            fw = f"{where}.functions[{j}]"
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                raise InputError(f"{fw}: needs a 'name' string")
            causes = f.get("causes") or {}
            if not isinstance(causes, dict):
                raise InputError(f"{fw}.causes: must be a mapping of category to count")
            functions.append(
                BaselineFunction(
                    name=f["name"],
                    file=str(f.get("file", "")),
                    line=_int(f.get("line"), f"{fw}.line", allow_none=True),
                    compiles=_int(f.get("compiles", 0), f"{fw}.compiles") or 0,
                    recompiles=_int(f.get("recompiles", 0), f"{fw}.recompiles") or 0,
                    limit_hits=_int(f.get("limit_hits", 0), f"{fw}.limit_hits") or 0,
                    causes=tuple(sorted((str(k), _int(v, f"{fw}.causes.{k}") or 0) for k, v in causes.items())),
                    budget=_int(f.get("budget"), f"{fw}.budget", allow_none=True),
                    process=_process(f.get("process", ""), f"{fw}.process"),
                    refused_calls=_int(f.get("refused_calls", 0), f"{fw}.refused_calls") or 0,
                    guards=_int(f.get("guards"), f"{fw}.guards", allow_none=True),
                    guard_latency_us=_micros(f.get("guard_latency_us"), f"{fw}.guard_latency_us"),
                    max_guards=_int(f.get("max_guards"), f"{fw}.max_guards", allow_none=True),
                    max_guard_latency_us=_micros(f.get("max_guard_latency_us"), f"{fw}.max_guard_latency_us"),
                )
            )
        scripts.append(BaselineScript(s["path"], tuple(functions), _int(s.get("max_recompiles"), f"{where}.max_recompiles", True)))
    torch = doc.get("torch_version")
    if torch is not None and not isinstance(torch, str):
        raise InputError(f"{path}: torch_version: must be text such as '2.13.0', not {torch!r}; quote it or re-create the baseline")
    return Baseline(tuple(scripts), torch)
