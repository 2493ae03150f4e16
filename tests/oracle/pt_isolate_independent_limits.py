"""Port of IsolateRecompilesTests.test_isolate_recompiles_same_backend_different_dynamic_independent_limits
(pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=2, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. Two isolated wrappers
of `f(x) = x.sin()` sharing a CompileCounter, one dynamic=False, one dynamic=True. The static region
compiles sizes 3 and 4 (its limit); the dynamic region compiles once for size 5 and hits for 6; the static
region raises FailOnRecompileLimitHit for size 5; the dynamic region still serves size 7.

torch asserts frame_count 2, 3, 3, the exception, then 3. f: 3 compiles, 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.exc import FailOnRecompileLimitHit

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 2  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True
torch._dynamo.config.automatic_dynamic_shapes = False

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_static = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
opt_dynamic = torch.compile(f, backend=counter, dynamic=True, isolate_recompiles=True)

opt_static(torch.randn(3))
opt_static(torch.randn(4))
assert counter.frame_count == 2, counter.frame_count

opt_dynamic(torch.randn(5))
assert counter.frame_count == 3, counter.frame_count
opt_dynamic(torch.randn(6))
assert counter.frame_count == 3, counter.frame_count

raised = False
try:
    opt_static(torch.randn(5))  # the static region hits its limit
except FailOnRecompileLimitHit:
    raised = True
assert raised, "expected FailOnRecompileLimitHit"

opt_dynamic(torch.randn(7))  # independent limit
assert counter.frame_count == 3, counter.frame_count

_truth.write()
