"""The words of each fix hint of ``guarddiag explain`` (the hints themselves: guarddiag/explain/hints.py).

A hint is facts (an id, its object, the lines to write, what guarddiag cannot tell and the choices);
these functions say them. Every hint id of ``guarddiag.explain.hints.HINTS`` has its words here.
"""

from __future__ import annotations

from collections.abc import Callable

from guarddiag.explain.model import Choice, CodeLine, FixHint
from guarddiag.render.words import cause_subject


def hint_subject(h: FixHint) -> str:
    """The hint's object in words: its subject, or the objects an aliasing hint found aliased (`` `a` and `b` ``)."""
    if h.hint == "one_tensor_twice":
        return " and ".join(f"`{name}`" for name in h.aliased) or "tensor inputs"
    return h.subject


def hint_text(h: FixHint) -> str:
    """The advice, about the hint's object."""
    return _HINTS[h.hint](hint_subject(h), h.literal)


def choice_text(c: Choice, h: FixHint) -> str:
    """One of hint ``h``'s choices, about the same object (a hint given as a choice has words of its own)."""
    return (_CHOICES.get(c.hint) or _HINTS[c.hint])(hint_subject(h), h.literal)


def hint_cause(h: FixHint) -> str:
    """The causes a hint is for: ``value: self.layer_idx; value: self.depth``."""
    return "; ".join(f"{c.category}: {cause_subject(c)}" for c in h.causes)


def unknown_text(h: FixHint) -> str:
    """What guarddiag cannot tell for this hint, and so why it gives choices (``""``: nothing)."""
    return _UNKNOWN[h.unknown](hint_subject(h)) if h.unknown else ""


def line_where(line: CodeLine, function: str) -> str:
    """What to do with a line and where, in words: ``write before each call of `train_step`, ...``;
    ``function``: the compiled function, for a line that names none of its own."""
    return _WHERE[line.where](line, line.function or function)


_WHERE: dict[str, Callable[[CodeLine, str], str]] = {
    "top_of_script": lambda line, _: "write at the top of the script, after its imports, before anything is compiled",
    "before_each_call": lambda line, fn: (
        f"write before each call of `{fn}`, with `{line.target}` the value passed for its parameter `{line.target}`"
    ),
    "wrap_argument": lambda line, fn: f"at each call of `{fn}`, pass for its parameter `{line.target}`",
    "after_each_call": lambda line, fn: (
        f"move from {line.at} out of `{fn}` to after each call"
        + (f", `{line.target}` being the call's result" if line.target else "")
        + " (the parameters it reads are the values passed)"
    ),
}

_UNKNOWN: dict[str, Callable[[str], str]] = {
    "owner": lambda src: f"guarddiag cannot tell whether what holds `{src}` is an nn.Module (its class is not in the source at hand)",
    "value_use": lambda src: (
        f"guarddiag cannot tell how the code uses `{src}`: torch kept it specialized, so it needs its Python value "
        "(a loop count, a shape, an argument torch takes as a number) or it is only arithmetic"
    ),
    "why_static": lambda src: (
        f"guarddiag cannot tell why the size of `{src}` stayed static after it changed: automatic dynamic is off "
        "(torch.compile(dynamic=False) or a config), or the code needs that size"
    ),
    "tensor_lifetime": lambda src: (
        f"guarddiag cannot tell whether `{src}` is one tensor kept across calls (changed in place) or a new one each time"
    ),
    "no_source": lambda src: (
        f"the compiled function's source is not at hand: guarddiag cannot tell whether the function itself changes `{src}`"
    ),
    "unwritable": lambda src: (
        f"torch names `{src}` in a way no line of Python (or entry of the dynamic-sources setting) can be written "
        "from as it is: guarddiag gives no line to write for it"
    ),
    "moved_values": lambda src: (
        "the line reads values the compiled function computes and does not return: return them too, "
        "then move the line out"
    ),
}

# A hint offered as one of several answers: said as an option, under the condition it is for.
_CHOICES: dict[str, Callable[[str, str], str]] = {
    "maybe_mark_dynamic": lambda src, _: (
        "mark the varying dims of each new tensor dynamic before each call (maybe_mark_dynamic never raises where "
        "torch must specialize a size; shapes static by default are made dynamic there)"
    ),
    "dynamic_sources": lambda src, _: (
        f"name `{src}` in the dynamic-sources setting (no code change): what it lists is dynamic from the first compile"
    ),
    "pad_to_buckets": lambda src, _: (
        f"if the code needs the size, or static shapes are wanted: pad `{src}` to a few fixed sizes (buckets), one entry each"
    ),
    "mark_dynamic": lambda src, dim: (
        f"if `{src}` is one tensor kept across calls and changed in place: mark dim {dim} dynamic once, after it is created"
    ),
    "allow_unspec_int_on_nn_module": lambda src, _: (
        "if it is an nn.Module: torch keeps its int attributes specialized; "
        "set torch._dynamo.config.allow_unspec_int_on_nn_module = True (torch >= 2.7)"
    ),
    "same_content": lambda src, _: f"if only the caller changes `{src}`: pass the same keys/length every time",
    "stable_keys": lambda src, _: f"if only the caller changes `{src}`: pass the same keys in the same order every time",
    "mutated_argument": lambda src, _: (
        f"if the compiled function itself changes `{src}` (appends, sets items): move that change out of it, after each call"
    ),
    "steers_python": lambda src, _: (
        "if it is not: torch needs its Python value (a loop count, a shape, a number a torch function takes), so "
        "each distinct value compiles once; use few distinct values, or pass a tensor if it is only arithmetic"
    ),
}

_HINTS: dict[str, Callable[[str, str], str]] = {
    "reuse_module_or_upgrade": lambda src, _: (
        f"this torch specializes on the id() of nn.Modules: reuse one `{src}` instance across calls, "
        "or upgrade to torch >= 2.5, which checks modules by type"
    ),
    "inline_inbuilt_nn_modules": lambda src, _: (
        f"nn.Modules are checked by id() here: set torch._dynamo.config.inline_inbuilt_nn_modules = True "
        f"(torch 2.4; the default from 2.5) so that another `{src}` instance reuses the entry, or reuse one instance"
    ),
    "allow_unspec_int_on_nn_module": lambda src, _: (
        f"`{src}` is an int attribute of an nn.Module, which torch keeps specialized: set "
        f"torch._dynamo.config.allow_unspec_int_on_nn_module = True so that it is an int like others, made dynamic "
        "after its first change (torch >= 2.7)"
    ),
    "int_attribute_or_upgrade": lambda src, _: (
        f"this torch always specializes int attributes of nn.Modules: keep `{src}` out of the compiled code "
        "(pass it as a tensor or compute with it outside), or upgrade to torch >= 2.7 for allow_unspec_int_on_nn_module"
    ),
    "dynamic_sources": lambda src, dim: (
        f"automatic dynamic made `{src}`"
        + (f" dim {dim}" if dim else "")
        + " dynamic after it changed (one recompile); naming it in the dynamic-sources setting makes the first "
        "compile dynamic there, with no code change"
    ),
    "became_dynamic": lambda src, _: (
        f"expected: automatic dynamic made `{src}` dynamic after one recompile, and other values reuse that entry; "
        "this torch has no dynamic-sources setting to make it dynamic from the first compile"
    ),
    "float_as_tensor": lambda src, _: (
        f"automatic dynamic made `{src}` dynamic after it changed (one recompile; later values reuse that entry), and the "
        "dynamic-sources setting does not take floats: to save that recompile, pass it as a tensor (torch.tensor(value)) "
        "where the code only computes with it (a function that takes a Python number, such as F.leaky_relu's "
        "negative_slope, breaks the graph on a tensor)"
    ),
    "global_as_argument": lambda src, _: (
        f"`{src}` is a global read inside the compiled code, its value baked in: read it outside and pass what "
        "the code needs as an argument (a tensor for numbers)"
    ),
    "code_path": lambda src, literal: (
        f"inherent: `{src}` picks a code path ({literal}), one cache entry per value; keep it to a few values, "
        "or compile each path as its own function"
    ),
    "steers_python": lambda src, _: (
        f"inherent while `{src}` steers Python (a loop count, a shape, a branch, a number a torch function takes): "
        "each distinct value compiles once; if it is only arithmetic, pass it as a tensor; otherwise use few distinct "
        "values, or raise torch._dynamo.config.recompile_limit so that calls past the limit stay compiled"
    ),
    "module_or_object": lambda src, _: f"an int attribute `{src}` that torch kept specialized",
    "move_out_of_compiled": lambda src, _: (
        f"`{src}` reaches Python code on a line that breaks the graph (`.item()`, print, logging): the line runs "
        "on every call and torch specializes what it reads; move it out of the compiled function"
    ),
    "value_at_graph_break": lambda src, _: (
        f"`{src}` reaches Python code on a line that breaks the graph: its value is baked into the code that resumes "
        "after the break; keep such lines (`.item()`, print, logging, a branch on a tensor) out of the compiled function"
    ),
    "maybe_mark_dynamic": lambda src, dim: (
        f"the size of `{src}` at dim {dim} varies between calls and the tensor is a new one each call: mark the "
        "varying dims of each new tensor before each call with maybe_mark_dynamic (mark_dynamic would raise where "
        "torch must specialize a size, and marks one tensor object only)"
    ),
    "mark_dynamic": lambda src, dim: (
        f"for a tensor kept across calls and changed in place: mark `{src}` dim {dim} dynamic once, "
        "after it is created, before the first call"
    ),
    "static_sizes": lambda src, dim: (
        f"the size of `{src}` at dim {dim} changed and the compile that followed kept it static: each size compiles its own entry"
    ),
    "pad_to_buckets": lambda src, _: (
        f"keep shapes static and pad `{src}` to a few fixed sizes (buckets): one entry per bucket"
    ),
    "size_one": lambda src, dim: (
        f"a size of 0 or 1 of `{src}`"
        + (f" at dim {dim}" if dim else "")
        + " gets its own entry even on a dynamic dim (torch specializes sizes 0 and 1): size-oblivious backed sizes "
        "let the dynamic entry cover it (may change results where the code branches on a size of 1)"
    ),
    "avoid_size_one": lambda src, _: (
        f"avoid a batch of size 1 in `{src}` (DataLoader(drop_last=True), or pad the last batch): a size of 0 or 1 "
        "always gets its own entry"
    ),
    "dynamic_range": lambda src, condition: (
        (f"the size guard `{condition}`" if condition else f"a size guard of `{src or 'a tensor'}`")
        + " of a dynamic entry no longer held: torch keeps one entry per side of each size guard it installed "
        "(a branch on the size, a bound, a relation between sizes), so this is one more entry, not one per size; "
        "expected where the code branches on the size, else keep the sizes on one side of it"
    ),
    "library_input": lambda src, package: (
        f"`{src}` is built by `{package}`, which calls the compiled code: a mark_dynamic in your script cannot reach it. "
        f"Use {package}'s own options for fixed shapes (e.g. a static cache or padding to fixed lengths), "
        "or compile with dynamic=True"
    ),
    "mutated_argument": lambda src, how: (
        f"the compiled function itself changes `{src}` ({how}): each call sees it changed and compiles anew, "
        "whatever the caller passes; move that change out of the compiled function"
    ),
    "same_content": lambda src, _: (
        f"the content of `{src}` changes between calls: pass the same keys/length every time, filling missing entries "
        "with values of the same kind (a tensor of the same dtype and requires_grad)"
    ),
    "stable_keys": lambda src, _: (
        f"the keys of `{src}` change between calls and each key set (and each order of them) compiles anew: pass the "
        "same keys in the same order every time (fill missing ones with a default), or pass the values as one tensor"
    ),
    "one_tensor_twice": lambda who, _: (
        f"{who} were one tensor in one call and distinct in another: stop passing one tensor twice "
        "(pass it once, or pass a .clone() where a distinct tensor is meant)"
    ),
    "ambient_state": lambda subject, _: f"expected: one entry per {subject} setting; no fix needed unless the states keep changing",
    "ambient_at_limit": lambda subject, _: (
        f"one entry per {subject} setting is expected, but this function hit its recompile limit: every other "
        f"cause's entries count once per {subject} setting, so fix the other causes first, or raise "
        "torch._dynamo.config.recompile_limit"
    ),
}
