"""Port of IsolateRecompilesTests.test_isolate_recompiles_string_backends (pytorch test/dynamo/test_recompile_ux.py).

Parametrized by backend in ("eager", "aot_eager"); both cases run here, the second after
torch._dynamo.reset() (as the test case's setUp does). Two isolated wrappers of `f(x) = x.sin()` with the same
string backend compile independently: 1 cache entry after region A's call, 2 after region B's, still 2
after calling both again.

torch asserts those entry counts. f: 2 compiles per case, 4 in all, 1 reset.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.eval_frame

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def num_cache_entries(code):
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))


def f(x):
    return x.sin()


for index, backend in enumerate(("eager", "aot_eager")):
    if index:
        torch._dynamo.reset()
    opt_a = torch.compile(f, backend=backend, isolate_recompiles=True)
    opt_b = torch.compile(f, backend=backend, isolate_recompiles=True)
    opt_a(torch.randn(3))
    assert num_cache_entries(f) == 1, (backend, num_cache_entries(f))
    opt_b(torch.randn(3))
    assert num_cache_entries(f) == 2, (backend, num_cache_entries(f))
    opt_a(torch.randn(3))
    opt_b(torch.randn(3))
    assert num_cache_entries(f) == 2, (backend, num_cache_entries(f))

_truth.write()
