"""Words for what removes guards (guarddiag.guardfilters) and for compare's guard figures."""

from __future__ import annotations

from guarddiag.guardfigures import FEWER, INCOMPARABLE, MARGIN, MORE, NOISE, SAME
from guarddiag.guardfilters import GUARD_HEAVY, REMOVERS, Remover, guard_filter, version_text
from guarddiag.render.escape import markdown_code, markdown_text, terminal
from guarddiag.render.formats import render_as

REMOVERS_SCHEMA = "guarddiag.guard_removers/1"

# What each row drops (Remover.drops).
DROPS = {
    "inbuilt_module_guards": "the guards on torch's own modules (nn.Linear, nn.LayerNorm, ...) that Dynamo inlines: "
    "their parameters, buffers and attributes",
    "module_guards": "the guards on every nn.Module, the user's own included: their parameters, buffers and attributes",
    "all_but_tensor_guards": "every guard but TENSOR_MATCH on tensors that are not nn.Parameters (keep_parameters=True keeps "
    "those too)",
    "global_guards": "every guard on a global (module-level names, their attributes, torch's own globals)",
    "all_but_portable_guards": "every guard but global state (grad mode, autocast...), symbolic shapes and TENSOR_MATCH on "
    "non-global tensors",
    "all_guards": "every guard: the first cache entry serves every call",
    "free_tensor_guards": "the input guards of tensors the code reads from globals, closures and module attributes: they "
    "become attributes of the graph",
    "parameter_shape_recompiles": "the recompile when a parameter's shape changes (its shape becomes dynamic); the guard "
    "count stays about the same",
    "non_differentiating_guards": "on each call, every guard but those that tell the cache entries apart",
}

# What each row gives up (Remover.gives_up).
GIVES_UP = {
    "inbuilt_module_changes": "replacing or changing a torch module's weights, buffers or attributes after compiling "
    "(e.g. loading a new state_dict into new tensors, swapping a layer) is not noticed: old code runs",
    "module_changes": "any change to a module after compiling (a flag attribute, a swapped submodule, new weights) is "
    "not noticed: old code runs",
    "everything_but_inputs": "only input tensors' dtype, device, shape and strides are checked: a changed int, flag, "
    "global or module attribute reuses code compiled for the old value",
    "global_changes": "a changed global (a config constant, a global tensor) is not noticed: old code runs",
    "everything_but_inputs_and_state": "only input tensors and global state are checked: a changed int, flag or module "
    "attribute reuses code compiled for the old value",
    "every_check": "nothing is checked: any input, shape or state the first compile did not see runs its code anyway",
    "free_tensor_changes": "a global or module tensor replaced by another object (not updated in place) is not noticed; "
    "the graph holds the tensor it saw",
    "static_parameter_shapes": "parameters' shapes are no longer assumed static: code is compiled for symbolic shapes",
    "unwarmed_inputs": "an input no cache entry was compiled for may run the wrong entry's code; set it only after "
    "warm-up, in the script (compare cannot apply it)",
}

NEEDS = {
    "inlined_inbuilt_modules": "drops nothing unless Dynamo inlines torch's modules (inline_inbuilt_nn_modules, the "
    "default since torch 2.5)",
}

_HOW = {
    "guard_filter": "--guard-filter {name}",
    "flag": "--flag {name}={value}",
    "code_change": "torch.compiler.set_stance('default', skip_guard_eval_unsafe=True) in the script after warm-up",
}


def remover_lines(row: Remover) -> list[str]:
    """One remover in words: name and version, what it drops, what it gives up, how guarddiag applies it."""
    where = "torch.compiler." if row.applied == "guard_filter" else "torch._dynamo.config." if row.applied == "flag" else ""
    lines = [
        f"{where}{row.name} (torch {version_text(row.since)}+)",
        f"  drops: {DROPS[row.drops]}",
        f"  gives up: {GIVES_UP[row.gives_up]}",
        f"  measure: {_HOW[row.applied].format(name=row.name, value=row.value)}",
    ]
    return lines + ([f"  note: {NEEDS[row.needs]}"] if row.needs else [])


def removers_text(torch_version: tuple[int, int] | None = None) -> str:
    """Every row of the table, in words; with ``torch_version``, whether that torch is known to have each."""
    out = []
    for row in REMOVERS:
        lines = remover_lines(row)
        if torch_version is not None:
            lines[0] += "" if torch_version >= row.since else f": not known in torch {version_text(torch_version)}"
        out += lines
    return "\n".join(out)


def render_removers(torch_version: str, version: tuple[int, int] | None, fmt: str) -> str:
    """``guarddiag flags --guard-removers``: what removes guards, for the target torch, in one of the formats."""

    def to_dict() -> dict[str, object]:
        return {
            "schema": REMOVERS_SCHEMA,
            "torch_version": torch_version,
            "removers": [
                {
                    "name": r.name, "kind": r.applied, "since": version_text(r.since),
                    "in_this_torch": None if version is None else version >= r.since,
                    "drops": DROPS[r.drops], "gives_up": GIVES_UP[r.gives_up], "needs": NEEDS.get(r.needs),
                    "measure": _HOW[r.applied].format(name=r.name, value=r.value),
                }
                for r in REMOVERS
            ],
        }

    def markdown() -> str:
        out = ["## What removes guards", "", markdown_text(f"torch {torch_version}"), ""]
        for row in REMOVERS:
            title, *rest = remover_lines(row)
            known = "" if version is None or version >= row.since else f": not known in torch {version_text(version)}"
            out += [f"- {markdown_code(title.partition(' (')[0])} {markdown_text('(' + title.partition(' (')[2] + known)}"]
            out += [f"  - {markdown_text(line.strip())}" for line in rest]
        return "\n".join(out) + "\n"

    def table() -> str:
        return terminal(f"what removes guards (torch {torch_version}):") + "\n" + removers_text(version)

    return render_as(fmt, to_dict, markdown, table)


def guard_change_words(listed: str, latency: str) -> str:
    """``fewer guards, faster`` / ``same guards, latency within noise``."""
    count = {FEWER: "fewer guards", MORE: "more guards", SAME: "same guards"}.get(listed, "guards not listed")
    time = {
        FEWER: "faster", MORE: "slower", NOISE: "latency within noise",
        INCOMPARABLE: "latency timed differently by the other torch (compare the measured lookups: --measure-guards)",
    }.get(latency, "latency not known")
    return f"{count}, {time}"


def guard_figures_note() -> str:
    """What the guard figures are and how far to trust the latency."""
    return (
        "guards installed: the leaves of the guard tree torch listed (after any guard filter); torch count: torch's "
        "guard_count, taken before a guard filter drops any; latency: torch's one measurement of one check of the "
        f"tree at compile time, noisy (1.5-1.7x between runs of the same configuration, and a rare far outlier): a change "
        f"of less than {MARGIN.factor:g}x or {MARGIN.floor_us:g} us is called noise, not a win (the margin check gates it "
        "with; --measure-guards gives what calls paid)"
    )


def guard_heavy_line(name: str, capped: bool) -> str:
    """Why compare without --flag tried a guard filter, and what it gives up."""
    row = guard_filter(name)
    did = f"{'not run (over --max-flips): ' if capped else 'also run: '}--guard-filter {name}"
    return (
        f"a function's newest cache entry has {GUARD_HEAVY:,} guards or more: {did}, to measure the guard latency it "
        f"saves; it gives up: {GIVES_UP[row.gives_up]}"
    )
