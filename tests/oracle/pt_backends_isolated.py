"""Port of IsolateRecompilesTests.test_different_backends_independent_with_isolate (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=2, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. Two isolated wrappers of
`f(x) = x.sum()` with different CompileCounter backends: A compiles sizes 3 and 4, and B - in its own
region - compiles sizes 5 and 6 without hitting A's entries' limit.

torch asserts A's frame_count 2 and B's 1, 2. f: 4 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 2  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True
torch._dynamo.config.automatic_dynamic_shapes = False

cnt_a = torch._dynamo.testing.CompileCounter()
cnt_b = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sum()


opt_a = torch.compile(f, backend=cnt_a, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend=cnt_b, dynamic=False, isolate_recompiles=True)
opt_a(torch.randn(3))
opt_a(torch.randn(4))
assert cnt_a.frame_count == 2, cnt_a.frame_count

opt_b(torch.randn(5))
assert cnt_b.frame_count == 1, cnt_b.frame_count
opt_b(torch.randn(6))
assert cnt_b.frame_count == 2, cnt_b.frame_count

_truth.write()
