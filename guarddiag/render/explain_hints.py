"""The words of each fix hint of ``guarddiag explain`` (the hints themselves: guarddiag/explain/hints.py)."""

from __future__ import annotations

from guarddiag.explain.model import FixHint


def hint_text(h: FixHint) -> str:
    """The advice, about the hint's object."""
    return _HINTS[h.hint](h.subject, h.literal)


def hint_cause(h: FixHint) -> str:
    """The causes a hint is for: ``value: self.layer_idx; value: self.depth``."""
    return "; ".join(f"{category}: {subject}" for category, subject in h.causes)


_HINTS = {
    "reuse_module_or_upgrade": lambda src, _: (
        f"this torch specializes on the id() of nn.Modules: reuse one `{src}` instance across calls, "
        "or upgrade to torch >= 2.5, which checks modules by type"
    ),
    "inline_inbuilt_nn_modules": lambda src, _: (
        f"nn.Modules are checked by id() here: set torch._dynamo.config.inline_inbuilt_nn_modules = True "
        f"(torch 2.4; the default from 2.5) so that another `{src}` instance reuses the entry, or reuse one instance"
    ),
    "dynamic_range": lambda src, dim: (
        f"a size of `{src or 'a tensor'}` left the range its dynamic entry covers (sizes 0 and 1 are always specialized): "
        "expected one more entry; "
        + (
            f"torch._dynamo.decorators.mark_unbacked({src}, {dim}) before the first call covers size 1 too (one entry for all sizes), "
            "or avoid size-1 batches (e.g. DataLoader drop_last=True)"
            if src and dim
            else "avoid size-1 batches (e.g. DataLoader drop_last=True) if it matters"
        )
    ),
    "mark_dynamic": lambda src, dim: (
        f"mark the varying dimension dynamic before the first call: torch._dynamo.mark_dynamic({src}, {dim or 'DIM'}) "
        "(sizes 0 and 1 are still specialized)"
    ),
    "mark_unbacked": lambda src, dim: (
        f"a size of 1 is specialized even on a dynamic dimension, so mark_dynamic cannot cover it: "
        f"torch._dynamo.mark_unbacked({src}, {dim or 'DIM'}) before the first call makes the dimension unbacked "
        "(any size, 1 included, reuses the entry), or keep that size above 1"
    ),
    "library_input": lambda src, package: (
        f"`{src}` is built by `{package}`, which calls the compiled code: a mark_dynamic in your script cannot reach it. "
        f"Use {package}'s own options for fixed shapes (e.g. a static cache or padding to fixed lengths), "
        "or compile with dynamic=True"
    ),
    "code_path": lambda src, literal: (
        f"inherent: `{src}` picks a code path ({literal}), one cache entry per value; keep it to a few values, "
        "or compile each path as its own function"
    ),
    "int_attribute_or_upgrade": lambda src, _: (
        f"this torch always specializes int attributes of nn.Modules: keep `{src}` out of the compiled code "
        "(pass it as a tensor or compute with it outside), or upgrade to torch >= 2.7 for allow_unspec_int_on_nn_module"
    ),
    "allow_unspec_int_on_nn_module": lambda src, _: (
        f"set torch._dynamo.config.allow_unspec_int_on_nn_module = True so that the int `{src}` becomes a dynamic int "
        "(torch >= 2.7)"
    ),
    "float_as_tensor": lambda src, _: (
        f"`{src}` is a Python float baked into the graph: pass it as a tensor (torch.tensor(value)) so new values reuse the entry"
    ),
    "global_as_argument": lambda src, _: (
        f"`{src}` is a global read inside the compiled code, its value baked in: read it outside and pass what "
        "the code needs as an argument (a tensor for numbers)"
    ),
    "steers_python": lambda src, _: (
        f"inherent while `{src}` steers Python (a loop count, a shape, a branch): each distinct value compiles once; "
        "if it is only arithmetic, pass it as a tensor; otherwise use few distinct values, or raise "
        "torch._dynamo.config.recompile_limit so that calls past the limit stay compiled"
    ),
    "same_content": lambda src, _: (
        f"the content of `{src}` changes between calls: pass the same keys/length every time, filling missing entries "
        "with values of the same kind (a tensor of the same dtype and requires_grad)"
    ),
    "stable_keys": lambda src, _: (
        f"the keys of `{src}` change between calls and each key set compiles anew: pass the same keys every time "
        "(fill missing ones with a default), or pass the values as one tensor"
    ),
    "one_tensor_twice": lambda who, _: (
        f"{who} were one tensor in one call and distinct in another: stop passing one tensor twice "
        "(pass it once, or pass a .clone() where a distinct tensor is meant)"
    ),
    "ambient_state": lambda subject, _: f"expected: one entry per {subject} setting; no fix needed unless the states keep changing",
}
