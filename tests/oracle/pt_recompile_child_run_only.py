"""Port of RecompileUxTests.test_recompile_child_run_only (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1. `f(x, n)` calls `g` then `h`; each adds a different amount only while dynamo traces it
(torch.compiler.is_compiling()), so the result tells which parts ran compiled. `g` is compiled on its own
first; then f is compiled (g and h inlined) with n=0. Calling f with n=1 hits f's limit: f runs eagerly,
g runs its earlier compiled code (+2), h runs eagerly - the result is inp + 3.

torch asserts that result. g: 1 compile; f: 1 compile and 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator


def f(x, n):
    if torch.compiler.is_compiling():
        x = x + 1
    x = g(x)
    return h(x) + n


def g(x):
    if torch.compiler.is_compiling():
        return x + 2
    return x


def h(x):
    if torch.compiler.is_compiling():
        return x + 4
    return x


torch.compile(g, backend="eager")(torch.randn(3))
inp = torch.randn(3)
opt_f = torch.compile(f, backend="eager")
opt_f(inp, 0)

# f runs eagerly now, g from its earlier compile, h eagerly
res = opt_f(inp, 1)
assert torch.allclose(res, inp + 3), (res, inp + 3)

_truth.write()
