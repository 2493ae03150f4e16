"""Port of RecompileTests.test_no_recursive_compile_after_cache_limit_hit (pytorch test/dynamo/test_recompiles.py).

recompile_limit=2. `f(x, n)` calls `g`, which calls `h`, all adding the int `n`; compiled with dynamic=False
and called with n = 0..9. f compiles for n=0 and n=1 (g and h are inlined), then hits the limit at n=2 and
runs without compiling from then on - and neither g nor h gets compiled on its own either.

torch asserts frame_count == 2. f: 2 compiles and 1 attempt refused at the limit; no other function compiles.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 2  # the test's decorator


def f(x, n):
    x = x + n
    return g(x, n)


def g(x, n):
    x = x + n
    return h(x, n)


def h(x, n):
    return x + n


counter = torch._dynamo.testing.CompileCounter()
opt_f = torch.compile(f, backend=counter, dynamic=False)
for i in range(10):
    opt_f(torch.ones(3), i)
assert counter.frame_count == 2, counter.frame_count

_truth.write()
