"""Port of IsolateRecompilesTests.test_isolate_recompiles_same_function_different_regions (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. Two isolated
torch.compile wrappers of `f(x) = x.sin()` (dynamic=False) each compile once, for sizes 3 and 4, without
the other's entry counting against their limit of 1 (which would raise).

torch asserts frame_count == 2. f: 2 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True
torch._dynamo.config.automatic_dynamic_shapes = False

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
opt_a(torch.randn(3))
opt_b(torch.randn(4))
assert counter.frame_count == 2, counter.frame_count

_truth.write()
