"""Port of IsolateRecompilesTests.test_isolate_recompiles_inherits_default_skip (pytorch test/dynamo/test_recompile_ux.py).

`f(x) = x.sin()` is marked with torch._dynamo.eval_frame.skip_code. Neither a plain torch.compile wrapper
nor an isolated one compiles it: a global SKIP is inherited by every region.

torch asserts frame_count 0, no entries in the default region or in the isolated region, and the isolated
call's result equals eager. No function compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


torch._dynamo.eval_frame.skip_code(f.__code__)

opt_default = torch.compile(f, backend=counter)
opt_default(torch.randn(3))
assert counter.frame_count == 0, counter.frame_count
assert len(_get_cache_entries_for_region(f, -1)) == 0

opt_iso = torch.compile(f, backend=counter, isolate_recompiles=True)
id_iso = opt_iso._isolate_recompiles_id
assert id_iso != -1
x = torch.randn(3)
assert torch.equal(opt_iso(x), f(x))
assert counter.frame_count == 0, counter.frame_count
assert len(_get_cache_entries_for_region(f, id_iso)) == 0

_truth.write()
