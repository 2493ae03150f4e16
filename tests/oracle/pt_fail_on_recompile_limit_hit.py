"""Port of RecompileUxTests.test_fail_on_recompile_limit_hit (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1, fail_on_recompile_limit_hit=True. `func(b, a)` branches on the bool `a`; called with
True it compiles, called with False it would need a second compile and raises FailOnRecompileLimitHit.

torch asserts the exception. func: 1 compile, 1 attempt refused at the limit (a hard failure).
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.exc import FailOnRecompileLimitHit

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True


@torch.compile(backend="eager")
def func(b, a):
    if a:
        return b * 2
    else:
        return b + 1


func(torch.randn(5), True)
raised = False
try:
    func(torch.randn(5), False)
except FailOnRecompileLimitHit:
    raised = True
assert raised, "expected FailOnRecompileLimitHit"

_truth.write()
