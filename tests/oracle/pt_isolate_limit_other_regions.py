"""Port of IsolateRecompilesTests.test_isolate_recompiles_limit_does_not_skip_other_regions (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1, automatic_dynamic_shapes=False. Wrappers of `f(x) = x.sin()` (eager, dynamic=False):
isolated A, isolated B and a plain (non-isolated) one. A compiles size 3 and hits its limit at size 4 (runs
eagerly from then on); B still compiles size 5 and the plain wrapper size 6 in the default region.

torch asserts distinct ids and 1 entry in A (twice), in B and in the default region. f: 3 compiles, 1
attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator
torch._dynamo.config.automatic_dynamic_shapes = False


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
opt_default = torch.compile(f, backend="eager", dynamic=False)
id_a = opt_a._isolate_recompiles_id
id_b = opt_b._isolate_recompiles_id
assert id_a != id_b
assert id_a != -1

opt_a(torch.randn(3))
assert len(_get_cache_entries_for_region(f, id_a)) == 1
opt_a(torch.randn(4))  # region A hits its limit
assert len(_get_cache_entries_for_region(f, id_a)) == 1

opt_b(torch.randn(5))
assert len(_get_cache_entries_for_region(f, id_b)) == 1

opt_default(torch.randn(6))
assert len(_get_cache_entries_for_region(f, -1)) == 1

_truth.write()
