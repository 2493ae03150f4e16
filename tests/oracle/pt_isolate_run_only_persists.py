"""Port of IsolateRecompilesTests.test_isolate_recompiles_region_run_only_persists (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1, automatic_dynamic_shapes=False. Two isolated wrappers of `f(x) = x.sin()` sharing a
CompileCounter (dynamic=False). Region A compiles size 3; size 4 hits its limit and the region is set to
run-only, so size 5 does not even reach dynamo's callback; size 3 still runs compiled; region B compiles
size 6.

torch asserts frame_count 1, 1, 1, 1, 2 and the region entry counts. f: 2 compiles, 1 attempt refused at
the limit (size 5 makes no attempt).
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator
torch._dynamo.config.automatic_dynamic_shapes = False

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
id_a = opt_a._isolate_recompiles_id
id_b = opt_b._isolate_recompiles_id

for size in (3, 4, 5):  # compile, limit hit, run-only
    opt_a(torch.randn(size))
    assert counter.frame_count == 1, (size, counter.frame_count)
    assert len(_get_cache_entries_for_region(f, id_a)) == 1

x3 = torch.randn(3)
assert torch.equal(opt_a(x3), f(x3))
assert counter.frame_count == 1, counter.frame_count

opt_b(torch.randn(6))
assert counter.frame_count == 2, counter.frame_count
assert len(_get_cache_entries_for_region(f, id_b)) == 1

_truth.write()
