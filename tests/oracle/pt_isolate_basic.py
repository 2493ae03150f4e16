"""Port of IsolateRecompilesTests.test_isolate_recompiles_basic (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. Two torch.compile
wrappers of `f(x) = x.sin()` with isolate_recompiles=True (dynamic=False) get their own cache regions.
Region A compiles for size 3 and raises FailOnRecompileLimitHit for size 4; region B still compiles size 5.

torch asserts distinct region ids, the exception, 1 entry in each region, 0 in the default region.
f: 2 compiles (one per region), 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region
from torch._dynamo.exc import FailOnRecompileLimitHit

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True
torch._dynamo.config.automatic_dynamic_shapes = False


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
assert opt_a._isolate_recompiles_id != opt_b._isolate_recompiles_id

opt_a(torch.randn(3))
raised = False
try:
    opt_a(torch.randn(4))  # region A exhausts its own limit
except FailOnRecompileLimitHit:
    raised = True
assert raised, "expected FailOnRecompileLimitHit"

opt_b(torch.randn(5))  # region B has its own budget
assert len(_get_cache_entries_for_region(f, opt_a._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, opt_b._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, -1)) == 0

_truth.write()
