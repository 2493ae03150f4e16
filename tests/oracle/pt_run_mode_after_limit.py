"""Port of RecompileTests.test_run_mode_after_cache_limit_hit (pytorch test/dynamo/test_recompiles.py).

recompile_limit=2. `f(x, n)` adds 1 and `g` adds 2 only while dynamo traces them
(torch._dynamo.is_compiling()), so results tell compiled from eager runs. With dynamic=False, n=0 and n=1
compile; n=2 hits the limit and from then on f runs eagerly (n=2, n=3 give the eager result), while the
cached n=0 and n=1 entries keep being used ("run mode").

torch asserts the six results and frame_count == 2. f: 2 compiles, 1 attempt refused at the limit.
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
    if torch._dynamo.is_compiling():
        x = x + 1
    return g(x, n)


def g(x, n):
    x = x + n
    if torch._dynamo.is_compiling():
        x = x + 2
    return x


counter = torch._dynamo.testing.CompileCounter()
opt_f = torch.compile(f, backend=counter, dynamic=False)
ones = torch.ones(3)
# (n, what opt_f must return): compiled runs add 3 more than eager ones
for n, plus in ((0, 3), (1, 5), (2, 4), (3, 6), (0, 3), (1, 5)):
    assert torch.equal(opt_f(torch.ones(3), n), ones + plus), n
assert counter.frame_count == 2, counter.frame_count

_truth.write()
