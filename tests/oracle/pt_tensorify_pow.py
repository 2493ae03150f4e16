"""Port of RecompileTests.test_tensorify_python_builtin_pow_does_not_recompile (pytorch test/dynamo/test_recompiles.py).

recompile_limit=2, fail_on_recompile_limit_hit=True. An Adam-like step divides by `bc2 ** 0.5`, bc2 a Python
float that changes every step (1 - 0.999 ** step); compiled with fullgraph=True on aot_eager, 8 steps. The
float must be tensorified, not specialized, so the limit is never reached (it would raise).

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


def step_param(v_t, bc2):
    eps = 1e-8
    return v_t.sqrt().div_(bc2**0.5).add_(eps)


counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
compiled = torch.compile(step_param, backend=counter, fullgraph=True)
base_v_t = torch.randn(64, 1280)
for step in range(1, 9):
    bc2 = 1.0 - 0.999**step
    got = compiled(base_v_t.clone(), bc2)
    want = step_param(base_v_t.clone(), bc2)
    assert torch.allclose(got, want, equal_nan=True), step
assert counter.frame_count <= 2, counter.frame_count

_truth.write()
