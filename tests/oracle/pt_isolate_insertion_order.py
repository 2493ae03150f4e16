"""Port of IsolateRecompilesTests.test_isolate_recompiles_insertion_order_per_region (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=2, automatic_dynamic_shapes=False. Two isolated wrappers of `f(x) = x.sin()` (eager,
dynamic=False) compile interleaved: A size 3, B size 10, A size 4, B size 11. Each region holds its two
entries newest first; then A size 5 and B size 12 hit their regions' limits and add nothing.

torch asserts distinct ids, 4 entries in all, 2 per region newest first, still 2 per region after the
limit. f: 4 compiles, 2 attempts refused at the limit.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region, _get_total_cache_entry_count

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 2  # the test's decorator
torch._dynamo.config.automatic_dynamic_shapes = False


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend="eager", dynamic=False, isolate_recompiles=True)
id_a = opt_a._isolate_recompiles_id
id_b = opt_b._isolate_recompiles_id
assert id_a != id_b

opt_a(torch.randn(3))
opt_b(torch.randn(10))
opt_a(torch.randn(4))
opt_b(torch.randn(11))
assert _get_total_cache_entry_count(f) == 4

for region in (id_a, id_b):
    entries = _get_cache_entries_for_region(f, region)
    assert len(entries) == 2, (region, len(entries))
    assert entries[0].compile_id.frame_compile_id > entries[1].compile_id.frame_compile_id  # newest first

opt_a(torch.randn(5))  # both regions at their limit: no new entries
assert len(_get_cache_entries_for_region(f, id_a)) == 2
opt_b(torch.randn(12))
assert len(_get_cache_entries_for_region(f, id_b)) == 2

_truth.write()
