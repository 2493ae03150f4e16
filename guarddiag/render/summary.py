"""What the human-readable renderers share: causes grouped per function, labels."""

from __future__ import annotations

from guarddiag.model import CauseGroup, Run, capture_gap, cause_groups, function_label, script_outcome

__all__ = ["CauseGroup", "cause_groups", "function_label", "headline", "parse_note", "run_notes"]


def headline(run: Run) -> str:
    """One line: totals and where they came from."""
    torch = f"torch {run.torch_version}" if run.torch_version else "torch version unknown"
    return (
        f"{len(run.functions)} compiled functions, {run.compiles} compiles, {run.recompiles} recompiles, "
        f"{run.limit_hits} recompile-limit hits, {run.graph_breaks} graph breaks ({torch})"
    )


def run_notes(run: Run) -> list[tuple[str, str]]:
    """What a report says under its headline, most important first, as (kind, text): how a failed
    script ended ("outcome"), a log that lost lines ("warning"), what torch said about the flags ("note")."""
    notes = []
    if run.source == "run" and run.status != "ok":
        notes.append(("outcome", script_outcome(run)))
    gap = capture_gap(run)
    if gap:
        notes.append(("warning", gap))
    notes += [("note", n) for n in run.flag_notes]
    return notes


def parse_note(run: Run) -> str | None:
    """A note when the parser met lines or frames it could not place, else None."""
    notes = []
    if run.parse.unrecognized:
        notes.append(f"{run.parse.unrecognized} torch log lines not understood (see `parse` in --format json)")
    if run.parse.unidentified_frames:
        notes.append(
            f"{len(run.parse.unidentified_frames)} frames not named in the log "
            "(enable TORCH_LOGS=dynamo when capturing)"
        )
    if run.parse.torch_lines == 0:
        notes.append("no torch log lines found: was the log captured with TORCH_LOGS=guards,recompiles,dynamo?")
    return "; ".join(notes) or None
