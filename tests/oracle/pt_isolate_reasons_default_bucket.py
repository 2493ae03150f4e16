"""Port of IsolateRecompilesTests.test_isolate_recompiles_reasons_include_default_bucket (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=8. `f(x) = x.sum()` through torch._dynamo.optimize("eager", dynamic=False): a plain wrapper
compiles size 3 into the default region; an isolated one compiles size 4 and then size 5 into its region.
The recompile at size 5 must report guard failures of both the region's entry and the default region's.

torch asserts both guard_fail_fn lists non-empty, 1 entry in the default region, 2 in the isolated one.
f: 3 compiles.
"""

import _truth
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 8  # the test's decorator

default_fails = []
region_fails = []


def f(x):
    return x.sum()


opt_default = torch._dynamo.optimize("eager", guard_fail_fn=lambda fl: default_fails.append(fl.reason), dynamic=False)(f)
opt_isolated = torch._dynamo.optimize(
    "eager", guard_fail_fn=lambda fl: region_fails.append(fl.reason), dynamic=False, isolate_recompiles=True
)(f)

opt_default(torch.randn(3))
opt_isolated(torch.randn(4))
opt_isolated(torch.randn(5))  # misses both the region's entry and the default one

assert region_fails, f"region entries' guard failures missing: {region_fails}"
assert default_fails, f"default-region guard failures dropped from the recompile reasons: {default_fails}"
assert opt_isolated._isolate_recompiles_id != -1
assert len(_get_cache_entries_for_region(f, -1)) == 1
assert len(_get_cache_entries_for_region(f, opt_isolated._isolate_recompiles_id)) == 2

_truth.write()
