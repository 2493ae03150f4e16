"""Port of IsolateRecompilesTests.test_isolate_recompiles_fullgraph_raises (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1. Two isolated wrappers of `f(x) = x.sin()` with fullgraph=True, dynamic=False. Region A
compiles size 3; size 4 raises FailOnRecompileLimitHit mentioning "fullgraph=True" (fullgraph turns the
limit into an error even without fail_on_recompile_limit_hit); region B still compiles size 5.

torch asserts distinct region ids, the exception and its text, 1 entry in B's region, 0 in the default
region. f: 2 compiles, 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region
from torch._dynamo.exc import FailOnRecompileLimitHit

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend="eager", fullgraph=True, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend="eager", fullgraph=True, dynamic=False, isolate_recompiles=True)
assert opt_a._isolate_recompiles_id != opt_b._isolate_recompiles_id

opt_a(torch.randn(3))
message = None
try:
    opt_a(torch.randn(4))
except FailOnRecompileLimitHit as exc:
    message = str(exc)
assert message is not None, "expected FailOnRecompileLimitHit"
assert "fullgraph=True" in message, message

opt_b(torch.randn(5))  # region B has its own budget
assert len(_get_cache_entries_for_region(f, opt_b._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, -1)) == 0

_truth.write()
