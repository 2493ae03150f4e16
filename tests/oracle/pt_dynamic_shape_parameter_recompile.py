"""Port of RecompileTests.test_dynamic_shape_parameter_recompile (pytorch test/dynamo/test_recompiles.py).

`foo(x) = x @ w` (w a 3x2 Parameter) is compiled with fullgraph=True and called with Parameters of shapes
(1, 3), (10, 3), (11, 3), (15, 3), (15, 3), in four rounds with torch._dynamo.reset() before each
(assume_static_by_default=True throughout):

1. force_parameter_static_shapes=True,  automatic_dynamic_shapes=False: 4 compiles
2. force_parameter_static_shapes=True,  automatic_dynamic_shapes=True:  4 compiles (Parameters stay static)
3. force_parameter_static_shapes=False, automatic_dynamic_shapes=False: 4 compiles
4. force_parameter_static_shapes=False, automatic_dynamic_shapes=True:  2 compiles

torch asserts frame_count == op_count == 4, 4, 4, 2. foo compiles 14 times in all.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

w = torch.nn.Parameter(torch.randn(3, 2))


def foo(x):
    return x @ w


def run_shapes():
    counter = torch._dynamo.testing.CompileCounter()
    opt = torch.compile(foo, backend=counter, fullgraph=True)
    for rows in (1, 10, 11, 15, 15):
        opt(torch.nn.Parameter(torch.randn(rows, 3)))
    return counter


for force_static, automatic, expected in ((True, False, 4), (True, True, 4), (False, False, 4), (False, True, 2)):
    torch._dynamo.reset()
    with torch._dynamo.config.patch(
        force_parameter_static_shapes=force_static, automatic_dynamic_shapes=automatic, assume_static_by_default=True
    ):
        counter = run_shapes()
    assert counter.frame_count == expected, (force_static, automatic, counter.frame_count)
    assert counter.op_count == expected, (force_static, automatic, counter.op_count)

_truth.write()
