"""Port of IsolateRecompilesTests.test_isolate_recompiles_debug_cache_entry_list_deterministic_order
(pytorch test/dynamo/test_recompile_ux.py).

Six isolated wrappers of `f(x) = x.sin()` sharing a CompileCounter are called in reverse order of creation,
each compiling size 3 into its own region. _debug_get_cache_entry_list lists the 6 entries sorted by
region id.

torch asserts 6 entries in region-id order. f: 6 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opts = [torch.compile(f, backend=counter, isolate_recompiles=True) for _ in range(6)]
for opt in reversed(opts):
    opt(torch.randn(3))

entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(f)
assert len(entries) == 6, len(entries)
ids = [e.isolate_recompiles_id for e in entries]
assert ids == sorted(ids), ids

_truth.write()
