"""Port of IsolateRecompilesTests.test_non_isolated_entries_visible_to_isolated (pytorch test/dynamo/test_recompile_ux.py).

`f(x) = x.exp()` compiled by a plain wrapper for size 3; an isolated wrapper with the same CompileCounter
backend then calls it with size 3 and reuses the default region's entry (read-only fallback) instead of
compiling.

torch asserts frame_count 1 and 1, the isolated region empty, 1 entry in the default region. f: 1 compile.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.exp()


opt_global = torch.compile(f, backend=counter)
opt_global(torch.randn(3))
assert counter.frame_count == 1, counter.frame_count

opt_isolated = torch.compile(f, backend=counter, isolate_recompiles=True)
opt_isolated(torch.randn(3))
assert counter.frame_count == 1, counter.frame_count

assert opt_isolated._isolate_recompiles_id != -1
assert len(_get_cache_entries_for_region(f, opt_isolated._isolate_recompiles_id)) == 0
assert len(_get_cache_entries_for_region(f, -1)) == 1

_truth.write()
