"""The compare report (``guarddiag compare``): the configurations run, their counts, and each
diffed against the baseline, as a terminal table, JSON, YAML or one Markdown document. No I/O here.

JSON/YAML schema versions (``schema`` key):
  guarddiag.compare/1 -- first version: ``torch_version``, ``no_ops`` (sentences), ``runs[]`` (one
  per configuration: label, python, flags, config, status/recompiles/records per repeat, unstable),
  and ``diffs[]`` as in guarddiag.diff/1.
"""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from guarddiag.compare import CompareReport, NoOp, Unstable, VariantResult
from guarddiag.render.diff import diffs_to_dict, markdown_sections, render_diffs
from guarddiag.render.formats import render_as
from guarddiag.render.words import function_label, script_outcome

COMPARE_SCHEMA = "guarddiag.compare/1"
_HEADERS = ["configuration", "config in force", "recompiles", "script"]


def render_compare(report: CompareReport, fmt: str) -> str:
    """The compare report in one of :data:`guarddiag.render.FORMATS`."""
    return render_as(fmt, lambda: compare_to_dict(report), lambda: _markdown(report), lambda: _table(report))


def compare_to_dict(report: CompareReport) -> dict[str, object]:
    """The JSON form of a compare report (the documented contract; ``--out`` writes it)."""
    return {
        "schema": COMPARE_SCHEMA,
        "torch_version": report.torch_version,
        "no_ops": [no_op_sentence(n) for n in report.plan.no_ops],
        "runs": [
            {
                "label": r.variant.label,
                "python": r.variant.python,
                "flags": dict(r.variant.flags),
                "torch_version": r.run.torch_version,
                "config": r.run.config,
                "status": [run.status for run in r.runs],
                "recompiles": [run.recompiles for run in r.runs],
                "records": [str(Path(run.log_path).with_name("run.json")) for run in r.runs if run.log_path],
                "unstable": [unstable_sentence(u) for u in r.unstable],
            }
            for r in report.results
        ],
        "diffs": diffs_to_dict(report.diffs)["diffs"],
    }


def no_op_sentence(n: NoOp) -> str:
    """Why a flag was left out of the runs."""
    return (
        f"{n.flag} does nothing in torch {n.torch_version}: {n.reason}; not run "
        "(compare it across torch versions with --python twice)"
    )


def unstable_sentence(u: Unstable) -> str:
    """``forward (model.py:12) compiled [1, 12] times across repeats``."""
    return f"{function_label(u.function)} compiled {list(u.compiles)} times across repeats"


def _rows(report: CompareReport) -> list[list[object]]:
    return [
        [
            r.variant.label,
            ", ".join(f"{k}={v}" for k, v in r.run.config.items()) or "(defaults)",
            " / ".join(str(run.recompiles) for run in r.runs),
            r.run.status if all(run.status == "ok" for run in r.runs) else "FAILED",
        ]
        for r in report.results
    ]


def _result_notes(r: VariantResult) -> list[str]:
    """What to keep in mind about one configuration's counts: noise between repeats, a run that stopped."""
    notes = [f"{r.variant.label}: {unstable_sentence(u)}; not attributed to a flag" for u in r.unstable]
    outcomes = dict.fromkeys(script_outcome(run) for run in r.runs if run.status != "ok")
    return notes + [f"{r.variant.label}: {o}; its counts cover what ran before that" for o in outcomes]


def _table(report: CompareReport) -> str:
    out = [f"guarddiag compare (torch {report.torch_version})"]
    out += [f"note: {no_op_sentence(n)}" for n in report.plan.no_ops]
    if report.results:
        out += ["", tabulate(_rows(report), headers=_HEADERS)]
        out += [f"note: {note}" for r in report.results for note in _result_notes(r)]
        out += ["", render_diffs(report.diffs, "table")]
    return "\n".join(out)


def _markdown(report: CompareReport) -> str:
    out = ["## guarddiag compare", "", f"torch {report.torch_version}"]
    notes = [no_op_sentence(n) for n in report.plan.no_ops] + [note for r in report.results for note in _result_notes(r)]
    out += ["", *(f"- note: {n}" for n in notes)] if notes else []
    if report.results:
        out += ["", tabulate(_rows(report), headers=_HEADERS, tablefmt="github")]
        out += markdown_sections(report.diffs)
    return "\n".join(out) + "\n"
