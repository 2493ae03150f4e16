"""Port of FloatGuardBitwiseTests.test_nan_float_does_not_recompile (pytorch test/dynamo/test_recompiles.py).

`f(x, s) = x * s` (dynamic=False) called twice with float("nan"): NaN != NaN, but the guard must still
accept the same NaN, so there is no recompile.

torch asserts frame_count == 1. f compiles once.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


@torch.compile(backend=counter, dynamic=False)
def f(x, s: float):
    return x * s


x = torch.randn(4)
f(x, float("nan"))
f(x, float("nan"))
assert counter.frame_count == 1, counter.frame_count

_truth.write()
