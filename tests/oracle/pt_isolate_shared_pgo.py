"""Port of IsolateRecompilesTests.test_isolate_recompiles_auto_dynamic_shared_pgo (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=True. Two isolated wrappers of `f(x) = x.sin()`, each with its own CompileCounter.
Region A sees (3, 4) then (5, 4): static, then dynamic -> 2 compiles. The shape history (frame state) is
shared across regions, so region B compiles dynamic at once for (7, 4) and hits its cache for (9, 4).

torch asserts A's counter 2, B's counter 1 and 1, distinct region ids, 1 entry in B's region and 0 in the
default region. f: 3 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes = True  # the test's decorator

cnt_a = torch._dynamo.testing.CompileCounter()
cnt_b = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend=cnt_a, isolate_recompiles=True)
opt_b = torch.compile(f, backend=cnt_b, isolate_recompiles=True)

opt_a(torch.randn(3, 4))
opt_a(torch.randn(5, 4))
assert cnt_a.frame_count == 2, cnt_a.frame_count

opt_b(torch.randn(7, 4))  # benefits from A's shape history: dynamic at once
assert cnt_b.frame_count == 1, cnt_b.frame_count
opt_b(torch.randn(9, 4))
assert cnt_b.frame_count == 1, cnt_b.frame_count

assert opt_a._isolate_recompiles_id != opt_b._isolate_recompiles_id
assert len(_get_cache_entries_for_region(f, opt_b._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, -1)) == 0

_truth.write()
