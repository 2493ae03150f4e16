"""Port of RecompileTests.test_tensorify_python_builtin_mul_does_not_recompile (pytorch test/dynamo/test_recompiles.py).

recompile_limit=2, fail_on_recompile_limit_hit=True. An optimizer-like step multiplies tensors in place by
Python floats computed from the learning rate and from the sizes (`max(1, r / c) ** 0.5`); compiled with
fullgraph=True on aot_eager and called for 8 different learning rates. The floats must be tensorified
instead of being specialized, so the limit is never reached (it would raise).

torch asserts the results equal eager and frame_count <= 2. On torch 2.13 (measured) it compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 2  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True


def scaling_step(update, dummy_tensor, lr):
    dummy_tensor.mul_(0.5 * lr)
    r, c = update.size(-2), update.size(-1)
    scaling_factor = max(1, r / c) ** 0.5
    update.mul_(scaling_factor * lr)
    return update


counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
compiled = torch.compile(scaling_step, backend=counter, fullgraph=True)
base_update = torch.randn(128, 128)
base_dummy = torch.randn(324, 64)
for i in range(8):
    lr = 1e-4 * (i + 1)
    got = compiled(base_update.clone(), base_dummy.clone(), lr)
    want = scaling_step(base_update.clone(), base_dummy.clone(), lr)
    assert torch.allclose(got, want), i
assert counter.frame_count <= 2, counter.frame_count

_truth.write()
