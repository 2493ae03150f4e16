"""Port of IsolateRecompilesTests.test_isolate_recompiles_factory_pattern (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=1, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False. A cached factory makes
one isolated torch.compile(fullgraph=True, dynamic=False) wrapper of `frontend(x, n) = core(x) + n` per key;
three keys call it with sizes 3, 4, 5. Each wrapper has its own region, so none of them hits the limit of 1
(which would raise).

The test compiles with the default backend (inductor); this script uses backend="eager" (CPU only, and the
backend plays no part in the counting). torch asserts only that nothing raises. frontend: 3 compiles.
"""

from functools import cache

import _truth
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # the test's decorator
torch._dynamo.config.fail_on_recompile_limit_hit = True
torch._dynamo.config.automatic_dynamic_shapes = False


def core(x):
    return x.sum()


@cache
def factory(key):
    @torch.compile(backend="eager", fullgraph=True, dynamic=False, isolate_recompiles=True)
    def frontend(x, n):
        return core(x) + n

    return frontend


factory("foo")(torch.ones(3), 3)
factory("bar")(torch.ones(4), 3)
factory("baz")(torch.ones(5), 3)

_truth.write()
