"""Port of RecompileTests.test_automatic_dynamic_on_closed_ints (pytorch test/dynamo/test_recompiles.py).

`h(x, g)` calls `g`, a closure that adds the int it closed over; h is called with 10 closures over 0..9.
The closed-over int is guarded as a constant first, then made dynamic by automatic dynamic shapes.

torch asserts frame_count == 2. h compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def make_adder(x):
    def g(y):
        return y + x

    return g


counter = torch._dynamo.testing.CompileCounter()


@torch.compile(backend=counter)
def h(x, g):
    return g(x)


for i in range(10):
    h(torch.randn(5), make_adder(i))
assert counter.frame_count == 2, counter.frame_count

_truth.write()
