"""Port of RecompileTests.test_recompiles_true_false_flop (pytorch test/dynamo/test_recompiles.py).

The test runs with assume_static_by_default=True. `foo(x, y)` branches on the bool `x`; it is compiled with
fullgraph=True and called with (True, size 2), (False, size 2), (True, size 3), (True, size 4), (True, size 5):

1. automatic_dynamic_shapes=False: every call compiles -> 5
2. after torch._dynamo.reset(), automatic_dynamic_shapes=True: True/2, False/2, then one dynamic True -> 3

torch asserts frame_count == op_count == 5, then 3. foo compiles 8 times in all.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.assume_static_by_default = True  # the test's decorator


def foo(x, y):
    if x:
        return y * 2
    else:
        return y * y


def run_calls():
    counter = torch._dynamo.testing.CompileCounter()
    opt = torch.compile(foo, backend=counter, fullgraph=True)
    for flag, size in ((True, 2), (False, 2), (True, 3), (True, 4), (True, 5)):
        opt(flag, torch.randn([size]))
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
