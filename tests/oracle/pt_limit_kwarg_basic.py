"""Port of RecompileLimitKwargTests.test_recompile_limit_basic (pytorch test/dynamo/test_recompile_ux.py).

`f(x, y) = x + y` compiled with torch.compile(recompile_limit=2) and called with float32, float64 and
float16 tensors. The third dtype must not compile: the per-compile limit of 2 is reached.

torch asserts 1, 2, 2 cache entries for f. f: 2 compiles, 1 attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def num_cache_entries(code):
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))


counter = torch._dynamo.testing.CompileCounter()


def f(x, y):
    return x + y


opt_f = torch.compile(f, backend=counter, recompile_limit=2)
opt_f(torch.randn(3), torch.randn(3))
assert num_cache_entries(f) == 1, num_cache_entries(f)
opt_f(torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64))
assert num_cache_entries(f) == 2, num_cache_entries(f)
opt_f(torch.randn(3, dtype=torch.float16), torch.randn(3, dtype=torch.float16))
assert num_cache_entries(f) == 2, num_cache_entries(f)  # the third dtype does not compile

_truth.write()
