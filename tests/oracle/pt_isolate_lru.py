"""Port of IsolateRecompilesTests.test_isolate_recompiles_lru_move_to_front (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=False. Two isolated wrappers of `f(x) = x.sin()` (eager, dynamic=False): region A
compiles sizes 3, 4, 5, region B sizes 6, 7. Calling A with size 3 again is a cache hit that moves that
entry to the front of A's list; B's order is untouched.

torch asserts A's order before and after, 3 entries in A (no recompile) and B's unchanged order.
f: 5 compiles.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes = False  # the test's decorator


def f(x):
    return x.sin()


def compile_ids(region):
    return [e.compile_id for e in _get_cache_entries_for_region(f, region)]


opt_a = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
id_a = opt_a._isolate_recompiles_id
id_b = opt_b._isolate_recompiles_id

for size in (3, 4, 5):
    opt_a(torch.randn(size))
before = compile_ids(id_a)
assert len(before) == 3, before

opt_b(torch.randn(6))
opt_b(torch.randn(7))
b_before = compile_ids(id_b)

opt_a(torch.randn(3))  # hit on the oldest entry: it moves to the front
after = compile_ids(id_a)
assert after == [before[-1], before[0], before[1]], (before, after)
assert len(after) == 3
assert compile_ids(id_b) == b_before

_truth.write()
