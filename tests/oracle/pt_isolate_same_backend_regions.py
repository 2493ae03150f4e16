"""Port of IsolateRecompilesTests.test_isolate_recompiles_same_backend_different_regions (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=False. Two isolated wrappers of `f(x) = x.sin()` share one CompileCounter backend.
Size 3 compiles in region A and again in region B (no cache hit across regions even with the same backend);
repeated size-3 calls hit each region's cache; size 4 then recompiles in each region separately.

torch asserts results equal eager and frame_count 1, 2, 2, 3, 4. f: 4 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes = False  # the test's decorator

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
x3 = torch.randn(3)
x4 = torch.randn(4)

assert torch.equal(opt_a(x3), f(x3))
assert counter.frame_count == 1, counter.frame_count
assert torch.equal(opt_b(x3), f(x3))  # another region: compiles again
assert counter.frame_count == 2, counter.frame_count
opt_a(x3)
opt_b(x3)
assert counter.frame_count == 2, counter.frame_count  # cache hits in each region
assert torch.equal(opt_a(x4), f(x4))
assert counter.frame_count == 3, counter.frame_count
assert torch.equal(opt_b(x4), f(x4))
assert counter.frame_count == 4, counter.frame_count

_truth.write()
