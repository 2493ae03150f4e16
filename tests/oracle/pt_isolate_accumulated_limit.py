"""Port of IsolateRecompilesTests.test_isolate_recompiles_accumulated_limit (pytorch test/dynamo/test_recompile_ux.py).

accumulated_recompile_limit=6, recompile_limit=4, automatic_dynamic_shapes=False. Three isolated wrappers of
`f(x) = x.sin()` (dynamic=False, eager) compile two sizes each (1..6): 6 entries on f's code object, the
accumulated cap, though each region is below its own limit of 4. Sizes 7, 8, 9 - one per region - then
run eagerly (correct results, no new entries), and a cached size still hits.

torch asserts the per-region and total entry counts after each step. f: 6 compiles, 3 attempts refused at
the accumulated limit.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region, _get_total_cache_entry_count

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.accumulated_recompile_limit = 6  # the test's decorator
torch._dynamo.config.recompile_limit = 4
torch._dynamo.config.automatic_dynamic_shapes = False


def f(x):
    return x.sin()


opts = [torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True) for _ in range(3)]
ids = [opt._isolate_recompiles_id for opt in opts]


def entries():
    return [len(_get_cache_entries_for_region(f, region)) for region in ids]


opts[0](torch.randn(1))
opts[0](torch.randn(2))
assert entries() == [2, 0, 0], entries()
assert _get_total_cache_entry_count(f) == 2

opts[1](torch.randn(3))
opts[1](torch.randn(4))
assert entries() == [2, 2, 0], entries()
assert _get_total_cache_entry_count(f) == 4

opts[2](torch.randn(5))
opts[2](torch.randn(6))
assert entries() == [2, 2, 2], entries()
assert _get_total_cache_entry_count(f) == 6

for opt, size in zip(opts, (7, 8, 9), strict=True):  # every region blocked: eager fallback
    x = torch.randn(size)
    assert torch.equal(opt(x), f(x))
assert entries() == [2, 2, 2], entries()
assert _get_total_cache_entry_count(f) == 6

x1 = torch.randn(1)
assert torch.equal(opts[0](x1), f(x1))  # cached sizes still hit

_truth.write()
