"""Port of RecompileTests.test_ambient_autocast_recompile (pytorch test/dynamo/test_recompiles.py).

`fn(x) = torch.mm(x, weights)` compiled with fullgraph=True on aot_eager, called outside autocast, then
under CPU autocast to float16, then to bfloat16. The ambient autocast state is guarded: each call recompiles
and returns the autocast dtype.

torch asserts the dtypes float32, float16, bfloat16 and frame_count == 3. fn compiles 3 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

weights = torch.randn(10, 10)
counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")


@torch.compile(backend=counter, fullgraph=True)
def fn(x):
    return torch.mm(x, weights)


x = torch.randn(1, 10)
assert fn(x).dtype == torch.float32
with torch.autocast("cpu", torch.float16):
    assert fn(x).dtype == torch.float16
with torch.autocast("cpu", torch.bfloat16):
    assert fn(x).dtype == torch.bfloat16
assert counter.frame_count == 3, counter.frame_count

_truth.write()
