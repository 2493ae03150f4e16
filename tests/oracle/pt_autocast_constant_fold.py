"""Port of RecompileTests.test_autocast_constant_fold (pytorch test/dynamo/test_recompiles.py).

`fn(x)` branches on torch.get_autocast_dtype("cpu") (a constant at trace time) and then multiplies by a
weight matrix; compiled with fullgraph=True (eager backend) and called under CPU autocast to float16, then
to bfloat16. The autocast state is guarded, so the second call recompiles instead of reusing the folded
branch.

torch asserts results equal eager and frame_count == 2. fn compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

weights = torch.randn(10, 10)
counter = torch._dynamo.testing.CompileCounterWithBackend("eager")


def fn(x):
    if torch.get_autocast_dtype("cpu") == torch.float16:  # noqa: SIM108 - the test's own branch
        x = x + 1
    else:
        x = x - 1
    return torch.mm(x, weights)


opt_fn = torch.compile(fn, backend=counter, fullgraph=True)
x = torch.randn(1, 10)
with torch.autocast("cpu", torch.float16):
    assert torch.allclose(fn(x).float(), opt_fn(x).float(), atol=1e-2)
with torch.autocast("cpu", torch.bfloat16):
    assert torch.allclose(fn(x).float(), opt_fn(x).float(), atol=1e-1)
assert counter.frame_count == 2, counter.frame_count

_truth.write()
