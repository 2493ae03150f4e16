"""Port of IsolateRecompilesTests.test_isolate_recompiles_ignores_default_run_only (pytorch test/dynamo/test_recompile_ux.py).

Under recompile_limit=1 and automatic_dynamic_shapes=False (a config.patch block), a plain wrapper of
`f(x) = x.sin()` (dynamic=False) compiles size 3, hits the limit at size 4 (f's default region becomes
run-only) and runs size 5 eagerly. After the block, an isolated wrapper must not inherit that run-only
state: it compiles size 6 into its own region.

torch asserts frame_count 1, then 2, and 1 entry in the isolated region. f: 2 compiles, 1 attempt refused
at the limit.
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
    return x.sin()


with torch._dynamo.config.patch(recompile_limit=1, automatic_dynamic_shapes=False):
    opt_default = torch.compile(f, backend=counter, dynamic=False)
    opt_default(torch.randn(3))
    opt_default(torch.randn(4))  # limit hit: run-only for the default region
    opt_default(torch.randn(5))  # run-only, no compile
assert counter.frame_count == 1, counter.frame_count

opt_iso = torch.compile(f, backend=counter, isolate_recompiles=True)
opt_iso(torch.randn(6))
assert counter.frame_count == 2, counter.frame_count
assert len(_get_cache_entries_for_region(f, opt_iso._isolate_recompiles_id)) == 1

_truth.write()
