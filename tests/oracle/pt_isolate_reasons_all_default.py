"""Port of IsolateRecompilesTests.test_isolate_recompiles_reasons_include_all_default_entries (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=8. `f(x) = x.sum()`: a plain torch._dynamo.optimize("eager", guard_fail_fn=..., dynamic=False)
wrapper compiles sizes 3 and 4 into the default region; an isolated wrapper compiles size 5, then size 6.
The recompile at size 6 must report the guard failures of both default entries.

torch asserts at least 2 default-region failures, a real region id and 2 entries in the default region.
f: 4 compiles.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 8  # the test's decorator

default_fails = []


def f(x):
    return x.sum()


opt_default = torch._dynamo.optimize("eager", guard_fail_fn=lambda fl: default_fails.append(fl.reason), dynamic=False)(f)
opt_default(torch.randn(3))
opt_default(torch.randn(4))

# Reasons are only gathered for a recompile, so the region gets one entry first.
opt_iso = torch._dynamo.optimize("eager", dynamic=False, isolate_recompiles=True)(f)
opt_iso(torch.randn(5))
default_fails.clear()

opt_iso(torch.randn(6))
assert len(default_fails) >= 2, f"expected guard failures for both default entries, got {default_fails}"
assert opt_iso._isolate_recompiles_id != -1
assert len(_get_cache_entries_for_region(f, -1)) == 2

_truth.write()
