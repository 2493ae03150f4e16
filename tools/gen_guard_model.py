"""Regenerate the table of docs/guard-model.md from the scenarios, with `guarddiag explain`.

    python tools/gen_guard_model.py              # torch 2.13: run the scenarios now; 2.4.1, 2.1.2: recorded logs
    python tools/gen_guard_model.py --recorded   # every version from tests/fixtures/logs (fast, no torch run)
    python tools/gen_guard_model.py --check      # exit 1 if the doc's table is not what would be generated

Only the parts between the ``<!-- guard-model:begin -->`` / ``end`` markers (the table) and the
``<!-- explain-example:begin -->`` / ``end`` markers (explain's default view of a recorded log) are rewritten.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from guarddiag.commands.explain import explain_lines, explain_path  # noqa: E402
from guarddiag.render.explain_words import ExplanationWords, FunctionWords, ObjectWords, explanation_words  # noqa: E402

DOC = ROOT / "docs" / "guard-model.md"
LOGS = ROOT / "tests" / "fixtures" / "logs"
NEUTRAL_PROJECT = "/home/user/project"
VERSIONS = ("2.13.0", "2.4.1", "2.1.2")
BEGIN, END = "<!-- guard-model:begin -->", "<!-- guard-model:end -->"
EXAMPLE_BEGIN, EXAMPLE_END = "<!-- explain-example:begin -->", "<!-- explain-example:end -->"
# The default view's example: .eval() under no_grad, a real log (tests/fixtures/causes/eval_no_grad.py).
EXAMPLE_LOG = "tests/fixtures/logs/torch-2.13.0/eval_no_grad.log"


@dataclass(frozen=True)
class Row:
    """One object kind of the mental model, backed by the scenario that exercises it."""

    kind: str
    scenario: str
    function: str
    object_name: str
    # Which cache entry to read: 0 (first) or -1 (last: after automatic dynamic has kicked in).
    entry: int = 0


ROWS = (
    Row("nn.Module as argument (`self`)", "fresh_module_instance", "forward", "argument `self`"),
    Row("parameters of that module", "fresh_module_instance", "forward", "parameters under `self`"),
    Row("int attribute of a module", "module_int_attribute", "forward", "`self.layer_idx`"),
    Row("bool attribute of a module", "module_bool_attribute", "forward", "`self.use_label_noise`"),
    Row("dict argument read by key", "dict_value", "mlp_forward", "argument `cfg`"),
    Row("value read from a dict", "dict_value", "mlp_forward", "`cfg['activation']`"),
    Row("dict argument iterated", "dict_keys", "weighted_total", "argument `losses`"),
    Row("global dict read by key", "dict_keys", "weighted_total", "global `LOSS_WEIGHTS`"),
    Row("list argument", "list_length", "fuse_pyramid", "argument `features`"),
    Row("module-level global", "global_variable", "augment_and_encode", "global `AUGMENT_MODE`"),
    Row("closure variable", "closure_variable", "hinge_loss", "closure variable `reduction`"),
    Row("class attribute", "class_attribute", "normalize_features", "`Cfg.norm_type`"),
    Row("float argument, first call", "float_hyperparameter", "sgd_update", "argument `lr`"),
    Row("float argument, after a new value", "float_hyperparameter", "sgd_update", "argument `lr`", entry=-1),
    Row("int argument driving a loop", "recompile_limit", "rollout", "argument `horizon`"),
    Row("tensor argument, first call", "tensor_shape", "train_step", "argument `x`"),
    Row("tensor argument, after a new size", "tensor_shape", "train_step", "argument `x`", entry=1),
)


def explanations(recorded: bool) -> dict[tuple[str, str], ExplanationWords]:
    """(version, scenario) -> explanation; torch 2.13 is run live unless ``recorded``."""
    out: dict[tuple[str, str], ExplanationWords] = {}
    for scenario in sorted({r.scenario for r in ROWS} | {"grad_mode"}):
        for version in VERSIONS:
            if version == VERSIONS[0] and not recorded:
                with tempfile.TemporaryDirectory() as tmp:
                    out[version, scenario] = _live(ROOT / "scenarios" / f"{scenario}.py", Path(tmp))
                continue
            with (LOGS / f"torch-{version}" / f"{scenario}.log").open(encoding="utf-8") as fh:
                out[version, scenario] = explanation_words(explain_lines(map(_in_checkout, fh), torch_version=version))
    return out


def _in_checkout(line: str) -> str:
    """Recorded logs name the neutral root (tests/fixtures/record_logs.py); read it as this checkout."""
    return line.replace(NEUTRAL_PROJECT + "/", f"{ROOT}/")


def _live(script: Path, workdir: Path) -> ExplanationWords:
    import os

    cwd = Path.cwd()
    os.chdir(workdir)  # the run folder goes to a temporary place, not into the repository
    try:
        explanation, _ = explain_path(script, full=False)
    finally:
        os.chdir(cwd)
    return explanation_words(explanation)


def _function(e: ExplanationWords, name: str) -> FunctionWords | None:
    return next((f for f in e.functions if f.name == name), None)


def _object(f: FunctionWords, name: str, entry: int) -> ObjectWords | None:
    if not f.entries or (entry > 0 and entry >= len(f.entries)):
        return None
    return next((o for o in f.entries[entry].objects if o.name.startswith(name) or name in o.name), None)


def cell(e: ExplanationWords, row: Row) -> str:
    """What explain says about the row's object on one torch version."""
    f = _function(e, row.function)
    if f is None:
        return "(not compiled)"
    o = _object(f, row.object_name, row.entry)
    if o is None:
        if row.entry and len(f.entries) <= abs(row.entry):
            return "(no such entry)"
        return "**not guarded**: changing it does not recompile (the compiled code keeps the old value)"
    said = [*o.recompiles[:2], *o.no_recompile[:1]]
    return f"**{o.how}** ({o.detail}): " + "; ".join(s.replace("|", "/") for s in said)


def ambient_cell(e: ExplanationWords) -> str:
    f = _function(e, "compute_loss")
    if f is None or not f.entries:
        return "(not compiled)"
    return f"**ambient**: {f.entries[0].ambient}; {f.compiles} entries (grad on, then off)"


def table(found: dict[tuple[str, str], ExplanationWords]) -> str:
    head = ["object kind", "scenario", *(f"torch {v}" for v in VERSIONS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in ROWS:
        cells = [cell(found[v, row.scenario], row) for v in VERSIONS]
        lines.append(f"| {row.kind} | `{row.scenario}` | " + " | ".join(cells) + " |")
    grad = [ambient_cell(found[v, "grad_mode"]) for v in VERSIONS]
    lines.append("| grad mode, autocast, default device | `grad_mode` | " + " | ".join(grad) + " |")
    return "\n".join(lines)


def example() -> str:
    """``guarddiag explain`` of the example log, as the command prints it (the default view)."""
    from guarddiag.render.explain import render_explanation

    with (ROOT / EXAMPLE_LOG).open(encoding="utf-8") as fh:
        text = render_explanation(explain_lines(map(_in_checkout, fh)), "table")
    return f"```\n$ guarddiag explain {EXAMPLE_LOG}\n{text}\n```"


def render_doc(current: str, generated: str, begin: str = BEGIN, end: str = END) -> str:
    head, sep, rest = current.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not sep or not sep2:
        raise SystemExit(f"{DOC}: the markers {begin} / {end} are missing")
    return f"{head}{begin}\n{generated}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorded", action="store_true", help="read torch 2.13 from the recorded logs too (no torch run)")
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the doc is out of date")
    args = parser.parse_args(argv)
    current = DOC.read_text(encoding="utf-8")
    wanted = render_doc(current, table(explanations(args.recorded)))
    wanted = render_doc(wanted, example(), EXAMPLE_BEGIN, EXAMPLE_END)
    if args.check:
        if wanted != current:
            print(f"{DOC} is out of date: run python tools/gen_guard_model.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
