"""Port of IsolateRecompilesTests.test_isolate_recompiles_static_and_dynamic (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=False. Two isolated wrappers of `f(x) = x.sum()` sharing a CompileCounter: one
dynamic=False, one dynamic=True. Static (4, 8) compiles; dynamic (5, 9) compiles; static (4, 8) hits;
dynamic (6, 10) hits; static (5, 9) recompiles in the static region only.

torch asserts frame_count 1, 2, 2, 2, 3, then 2 entries in the static region, 1 in the dynamic region,
0 in the default region. f: 3 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes = False  # the test's decorator

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sum()


opt_static = torch.compile(f, backend=counter, dynamic=False, isolate_recompiles=True)
opt_dynamic = torch.compile(f, backend=counter, dynamic=True, isolate_recompiles=True)

for opt, shape, expected in (
    (opt_static, (4, 8), 1),
    (opt_dynamic, (5, 9), 2),
    (opt_static, (4, 8), 2),  # static cache hit
    (opt_dynamic, (6, 10), 2),  # dynamic cache hit with another shape
    (opt_static, (5, 9), 3),  # static recompile
):
    opt(torch.randn(*shape))
    assert counter.frame_count == expected, (shape, counter.frame_count, expected)

assert opt_static._isolate_recompiles_id != opt_dynamic._isolate_recompiles_id
assert len(_get_cache_entries_for_region(f, opt_static._isolate_recompiles_id)) == 2
assert len(_get_cache_entries_for_region(f, opt_dynamic._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, -1)) == 0

_truth.write()
