"""Port of RecompileTests.test_automatic_dynamic_tensor_scalar_change (pytorch test/dynamo/test_recompiles.py).

`foo(x, y) = x * y` with x a tensor of sizes 2, 3, 4, 4, 5, 5, 6 and y switching between a tensor of the same
size and a Python int (3, then 4):

1. automatic_dynamic_shapes=False, assume_static_by_default=True: 5 compiles
2. after torch._dynamo.reset(), automatic_dynamic_shapes=True: 3 compiles

torch asserts frame_count == op_count == 5, then 3. foo compiles 8 times in all.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def foo(x, y):
    return x * y


def run_calls():
    counter = torch._dynamo.testing.CompileCounter()
    opt = torch.compile(foo, backend=counter)
    # (size of x, y): None means "a tensor like x"
    for size, scalar in ((2, None), (3, 3), (4, None), (4, None), (5, 4), (5, 4), (6, None)):
        x = torch.randn([size])
        opt(x, torch.randn([size]) if scalar is None else scalar)
    return counter


with torch._dynamo.config.patch(automatic_dynamic_shapes=False, assume_static_by_default=True):
    without = run_calls()
assert without.frame_count == 5, without.frame_count
assert without.op_count == 5, without.op_count
torch._dynamo.reset()
with torch._dynamo.config.patch(automatic_dynamic_shapes=True, assume_static_by_default=True):
    with_automatic = run_calls()
assert with_automatic.frame_count == 3, with_automatic.frame_count
assert with_automatic.op_count == 3, with_automatic.op_count

_truth.write()
