"""Port of RecompileTests.test_automatic_dynamic_reduce_recompiles (pytorch test/dynamo/test_recompiles.py).

`foo(x, y) = x * y` is called on 1-d tensors of sizes 2, 3, 4, 4, 5, 5, 6 in five rounds, each with a
fresh CompileCounter and torch._dynamo.reset() between rounds:

1. automatic_dynamic_shapes=False, assume_static_by_default=True: one compile per new size -> 5
2. torch.compile(dynamic=False): 5
3. automatic_dynamic_shapes=True, assume_static_by_default=True: static, then dynamic -> 2
4. torch.compile(dynamic=None) with the defaults: 2
5. torch.compile(dynamic=True): 1

torch asserts frame_count == op_count == 5, 5, 2, 2, 1. foo compiles 15 times in all, 4 resets.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

# What torch._dynamo.test_case.TestCase sets for every test.
torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def foo(x, y):
    return x * y


def run_sizes(dynamic=None):
    counter = torch._dynamo.testing.CompileCounter()
    opt = torch.compile(foo, backend=counter, dynamic=dynamic)
    for size in (2, 3, 4, 4, 5, 5, 6):
        opt(torch.randn([size]), torch.randn([size]))
    return counter


def expect(counter, n):
    assert counter.frame_count == n, (counter.frame_count, n)
    assert counter.op_count == n, (counter.op_count, n)


with torch._dynamo.config.patch(automatic_dynamic_shapes=False, assume_static_by_default=True):
    expect(run_sizes(), 5)
torch._dynamo.reset()
expect(run_sizes(dynamic=False), 5)
torch._dynamo.reset()
with torch._dynamo.config.patch(automatic_dynamic_shapes=True, assume_static_by_default=True):
    expect(run_sizes(), 2)
torch._dynamo.reset()
expect(run_sizes(dynamic=None), 2)
torch._dynamo.reset()
expect(run_sizes(dynamic=True), 1)

_truth.write()
