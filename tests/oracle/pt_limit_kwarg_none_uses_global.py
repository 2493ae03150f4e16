"""Port of RecompileLimitKwargTests.test_recompile_limit_none_uses_global (pytorch test/dynamo/test_recompile_ux.py).

`f(x, y) = x + y` compiled without a recompile_limit argument, so the global config (8) applies; called with
10 dtypes in turn (float32, float64, float16, bfloat16, int32, int64, int16, int8, uint8, complex64).
The 9th dtype hits the limit and f runs without compiling from then on.

torch asserts f has config.recompile_limit (8) cache entries. f: 8 compiles, 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x, y):
    return x + y


opt_f = torch.compile(f, backend=counter)
dtypes = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
    torch.int64, torch.int16, torch.int8, torch.uint8, torch.complex64,
]
for dtype in dtypes:
    opt_f(torch.ones(3, dtype=dtype), torch.ones(3, dtype=dtype))

entries = len(torch._dynamo.eval_frame._debug_get_cache_entry_list(f))
assert entries == torch._dynamo.config.recompile_limit, (entries, torch._dynamo.config.recompile_limit)

_truth.write()
