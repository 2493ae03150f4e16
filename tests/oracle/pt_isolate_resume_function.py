"""Port of IsolateRecompilesTests.test_isolate_recompiles_resume_function (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=3. `f(x)` computes x.sin(), breaks the graph, then returns cos/tan/exp/+1 of it depending on
a mode held in a dict. Two isolated wrappers share a CompileCounter. Region A, mode "a": main and resume
frame compile (2). Modes "b" and "c" recompile only A's resume frame (3, 4). Mode "d" finds A's resume frame
at its limit of 3 entries: it runs eagerly (4). Region B, mode "a": both of its frames compile (6).

torch asserts frame_count 2, 3, 4, 4, 6. f: 2 compiles; its resume function: 4 compiles and 1 attempt
refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 3  # the test's decorator

counter = torch._dynamo.testing.CompileCounter()
mode = {"value": "a"}


def f(x):
    a = x.sin()
    torch._dynamo.graph_break()
    if mode["value"] == "a":
        return a.cos()
    elif mode["value"] == "b":
        return a.tan()
    elif mode["value"] == "c":
        return a.exp()
    else:
        return a + 1


opt_a = torch.compile(f, backend=counter, isolate_recompiles=True)
opt_b = torch.compile(f, backend=counter, isolate_recompiles=True)
assert opt_a._isolate_recompiles_id != opt_b._isolate_recompiles_id

for opt, value, expected in ((opt_a, "a", 2), (opt_a, "b", 3), (opt_a, "c", 4), (opt_a, "d", 4), (opt_b, "a", 6)):
    mode["value"] = value
    opt(torch.randn(4))
    assert counter.frame_count == expected, (value, counter.frame_count, expected)

_truth.write()
