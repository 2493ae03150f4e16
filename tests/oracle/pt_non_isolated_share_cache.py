"""Port of IsolateRecompilesTests.test_non_isolated_compiles_share_cache (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=2, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. Two plain wrappers of
`f(x) = x.exp()` (dynamic=False) share the default region: A compiles size 3, B hits it; B compiles size 4,
A hits it; A's size 5 exceeds the shared limit and raises FailOnRecompileLimitHit.

torch asserts frame_count 1, 1, 2, 2 and the exception. f: 2 compiles, 1 attempt refused at the limit.
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
    return x.exp()


opt_a = torch.compile(f, backend=counter, dynamic=False)
opt_b = torch.compile(f, backend=counter, dynamic=False)
for opt, size, expected in ((opt_a, 3, 1), (opt_b, 3, 1), (opt_b, 4, 2), (opt_a, 4, 2)):
    opt(torch.randn(size))
    assert counter.frame_count == expected, (size, counter.frame_count, expected)

raised = False
try:
    opt_a(torch.randn(5))  # the shared limit
except FailOnRecompileLimitHit:
    raised = True
assert raised, "expected FailOnRecompileLimitHit"

_truth.write()
