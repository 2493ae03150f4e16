"""Port of IsolateRecompilesTests.test_isolate_recompiles_mark_dynamic_vs_static (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=False. Two isolated wrappers of `f(x) = x.sin()`, each with its own CompileCounter.
Region "static" is fed tensors with dim 0 marked static, region "dynamic" a tensor with dim 0 marked dynamic.
Static (4, 8) compiles; dynamic (4, 8) compiles; static (4, 8) hits; dynamic (7, 8) hits; static (7, 8)
recompiles.

torch asserts the static counter 1, 1, 2 and the dynamic counter 1, 1, then 2 entries in the static region,
1 in the dynamic region, 0 in the default region. f: 3 compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing
from torch._dynamo.eval_frame import _get_cache_entries_for_region

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes = False  # the test's decorator

cnt_static = torch._dynamo.testing.CompileCounter()
cnt_dynamic = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


def static_input(*shape):
    x = torch.randn(*shape)
    torch._dynamo.mark_static(x, 0)
    return x


opt_static = torch.compile(f, backend=cnt_static, isolate_recompiles=True)
opt_dynamic = torch.compile(f, backend=cnt_dynamic, isolate_recompiles=True)

opt_static(static_input(4, 8))
assert cnt_static.frame_count == 1, cnt_static.frame_count

x_dynamic = torch.randn(4, 8)
torch._dynamo.mark_dynamic(x_dynamic, 0)
opt_dynamic(x_dynamic)
assert cnt_dynamic.frame_count == 1, cnt_dynamic.frame_count

opt_static(static_input(4, 8))  # static cache hit, same shape
assert cnt_static.frame_count == 1, cnt_static.frame_count

opt_dynamic(torch.randn(7, 8))  # dynamic cache hit, another size on the dynamic dim
assert cnt_dynamic.frame_count == 1, cnt_dynamic.frame_count

opt_static(static_input(7, 8))  # static recompile
assert cnt_static.frame_count == 2, cnt_static.frame_count

assert opt_static._isolate_recompiles_id != opt_dynamic._isolate_recompiles_id
assert len(_get_cache_entries_for_region(f, opt_static._isolate_recompiles_id)) == 2
assert len(_get_cache_entries_for_region(f, opt_dynamic._isolate_recompiles_id)) == 1
assert len(_get_cache_entries_for_region(f, -1)) == 0

_truth.write()
