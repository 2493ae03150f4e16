"""Port of RecompileTests.test_unmutated_method_does_not_recompile (pytorch test/dynamo/test_recompiles.py).

`fn(obj, x)` (fullgraph=True) calls `obj.m(x)`; called with two different instances of one class. Both share
the method's code object, so the second call hits the first compile.

torch asserts frame_count == 1. fn compiles once.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


class Model:
    def m(self, x):
        return x * 2.0


counter = torch._dynamo.testing.CompileCounter()


@torch.compile(backend=counter, fullgraph=True)
def fn(obj, x):
    return obj.m(x)


x = torch.arange(1.0, 4.0)
fn(Model(), x)
fn(Model(), x)
assert counter.frame_count == 1, counter.frame_count

_truth.write()
