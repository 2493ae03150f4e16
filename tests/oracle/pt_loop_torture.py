"""Port of RecompileUxTests.test_loop_torture (pytorch test/dynamo/test_recompile_ux.py).

The test class runs with recompile_limit=1. `loop_torture(input, iters)` adds `input` to itself `iters`
times, `iters` being a 0-d tensor from torch.randint (iterating over range(tensor) breaks the graph). It is
wrapped anew by torch.compile and called 10 times with a fresh random tensor and count. The backend
receives one graph in all: the limit of 1 stops everything after the first compile.

torch asserts CompileCounter frame_count == 1 (== the class's cache_limit). On torch 2.13 (measured):
loop_torture compiles once (the graph before the break), its resume function compiles once and then has 1
attempt refused at the limit.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # RecompileUxTests.cache_limit
cache_limit = 1


def loop_torture(input, iters):
    out = input
    # randint itself causes one graph break
    for _ in range(iters):
        out += input
    return out


compile_counter = torch._dynamo.testing.CompileCounter()
for _ in range(10):
    x = torch.randn(3)
    iters = torch.randint(low=0, high=1000, size=())
    opt_loop_torture = torch.compile(loop_torture, backend=compile_counter)
    opt_loop_torture(x, iters)

assert compile_counter.frame_count == cache_limit, compile_counter.frame_count

_truth.write()
