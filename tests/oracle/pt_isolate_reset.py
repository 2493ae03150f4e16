"""Port of IsolateRecompilesTests.test_isolate_recompiles_reset (pytorch test/dynamo/test_recompile_ux.py).

Two isolated wrappers of `f(x) = x.cos()` with their own CompileCounters compile sizes 3 and 4, one entry
per region and none in the default region. torch._dynamo.reset() clears every region, so calling both again
compiles both again.

torch asserts each counter 1, the region entry counts, then each counter 2. f: 4 compiles (2 before and 2
after the reset).
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

cnt_a = torch._dynamo.testing.CompileCounter()
cnt_b = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.cos()


opt_a = torch.compile(f, backend=cnt_a, isolate_recompiles=True)
opt_b = torch.compile(f, backend=cnt_b, isolate_recompiles=True)

opt_a(torch.randn(3))
opt_b(torch.randn(4))
assert (cnt_a.frame_count, cnt_b.frame_count) == (1, 1)
assert opt_a._isolate_recompiles_id != opt_b._isolate_recompiles_id
assert len(_get_cache_entries_for_region(f, opt_a._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, opt_b._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, -1)) == 0

torch._dynamo.reset()

opt_a(torch.randn(3))
opt_b(torch.randn(4))
assert (cnt_a.frame_count, cnt_b.frame_count) == (2, 2)

_truth.write()
