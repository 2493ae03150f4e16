"""Port of RecompileLimitKwargTests.test_recompile_limit_fullgraph_raises (pytorch test/dynamo/test_recompile_ux.py).

`f(x) = x.sin()` compiled with fullgraph=True and recompile_limit=1: the first call compiles; a float64
input would need a second compile, and with fullgraph=True hitting the limit raises FailOnRecompileLimitHit.

torch asserts frame_count == 1 and the exception. f: 1 compile, 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.exc import FailOnRecompileLimitHit

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_f = torch.compile(f, backend=counter, fullgraph=True, recompile_limit=1)
opt_f(torch.randn(3))
assert counter.frame_count == 1, counter.frame_count

raised = False
try:
    opt_f(torch.randn(3, dtype=torch.float64))
except FailOnRecompileLimitHit:
    raised = True
assert raised, "expected FailOnRecompileLimitHit"

_truth.write()
