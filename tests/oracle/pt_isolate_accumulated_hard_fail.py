"""Port of IsolateRecompilesTests.test_isolate_recompiles_accumulated_limit_hard_fail (pytorch test/dynamo/test_recompile_ux.py).

accumulated_recompile_limit=4, recompile_limit=8, automatic_dynamic_shapes=False,
fail_on_recompile_limit_hit=True. Two isolated wrappers of `f(x) = x.cos()` compile two sizes each (1..4),
reaching the accumulated cap of 4; size 5 in region A and size 6 in region B each raise
FailOnRecompileLimitHit.

torch asserts 2 entries per region and both exceptions. f: 4 compiles, 2 attempts refused at the limit.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region
from torch._dynamo.exc import FailOnRecompileLimitHit

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.accumulated_recompile_limit = 4  # the test's decorator
torch._dynamo.config.recompile_limit = 8
torch._dynamo.config.automatic_dynamic_shapes = False
torch._dynamo.config.fail_on_recompile_limit_hit = True


def f(x):
    return x.cos()


opt_a = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)

opt_a(torch.randn(1))
opt_a(torch.randn(2))
opt_b(torch.randn(3))
opt_b(torch.randn(4))
assert len(_get_cache_entries_for_region(f, opt_a._isolate_recompiles_id)) == 2
assert len(_get_cache_entries_for_region(f, opt_b._isolate_recompiles_id)) == 2

for opt, size in ((opt_a, 5), (opt_b, 6)):
    raised = False
    try:
        opt(torch.randn(size))
    except FailOnRecompileLimitHit:
        raised = True
    assert raised, f"expected FailOnRecompileLimitHit for size {size}"

_truth.write()
