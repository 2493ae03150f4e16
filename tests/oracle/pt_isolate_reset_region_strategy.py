"""Port of IsolateRecompilesTests.test_isolate_recompiles_reset_clears_region_strategy (pytorch test/dynamo/test_recompile_ux.py).

Under recompile_limit=1 and automatic_dynamic_shapes=False, an isolated wrapper of `f(x) = x.sin()`
(dynamic=False) compiles size 3 and hits its region's limit at size 4 (the region becomes run-only).
torch._dynamo.reset() must clear that state: a new isolated wrapper then compiles size 5.

torch asserts frame_count 1, real region ids, then frame_count 2. f: 2 compiles (one before and one after
the reset), 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


with torch._dynamo.config.patch(recompile_limit=1, automatic_dynamic_shapes=False):
    opt_a = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
    opt_a(torch.randn(3))
    opt_a(torch.randn(4))  # limit hit: the region becomes run-only
    assert counter.frame_count == 1, counter.frame_count

torch._dynamo.reset()

opt_b = torch.compile(f, backend=counter, isolate_recompiles=True)
assert opt_a._isolate_recompiles_id != -1
assert opt_b._isolate_recompiles_id != -1
opt_b(torch.randn(5))
assert counter.frame_count == 2, counter.frame_count

_truth.write()
