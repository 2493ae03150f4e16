"""Port of IsolateRecompilesTests.test_non_isolated_reasons_unchanged (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=8. `f(x) = x.sum()` through torch._dynamo.optimize("eager", guard_fail_fn=..., dynamic=False)
on sizes 3 and 4: the recompile for size 4 reports a guard failure through guard_fail_fn.

torch asserts the failure list non-empty. f: 2 compiles.
"""

import _truth
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 8  # the test's decorator

fails = []


def f(x):
    return x.sum()


opt = torch._dynamo.optimize("eager", guard_fail_fn=lambda failure: fails.append(failure.reason), dynamic=False)(f)
opt(torch.randn(3))
opt(torch.randn(4))
assert fails, f"no recompile reasons logged: {fails}"

_truth.write()
