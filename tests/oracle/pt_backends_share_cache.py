"""Port of IsolateRecompilesTests.test_different_backends_shared_cache_without_isolate (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=2, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. Two plain wrappers of
`f(x) = x.sum()` with different CompileCounter backends share f's cache: A compiles sizes 3 and 4, and B's
first call (size 5) already exceeds the limit and raises FailOnRecompileLimitHit.

torch asserts A's frame_count 2 and the exception. f: 2 compiles, 1 attempt refused at the limit.
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

cnt_a = torch._dynamo.testing.CompileCounter()
cnt_b = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sum()


opt_a = torch.compile(f, backend=cnt_a, dynamic=False)
opt_b = torch.compile(f, backend=cnt_b, dynamic=False)
opt_a(torch.randn(3))
opt_a(torch.randn(4))
assert cnt_a.frame_count == 2, cnt_a.frame_count

raised = False
try:
    opt_b(torch.randn(5))
except FailOnRecompileLimitHit:
    raised = True
assert raised, "expected FailOnRecompileLimitHit"

_truth.write()
