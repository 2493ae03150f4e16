"""Port of RecompileTests.test_object_alias_relation_guards_without_lambda (pytorch test/dynamo/test_recompiles.py).

With use_lamba_guard_for_object_aliasing=False, `foo(box_a, box_b, t)` returns t + 1 when both arguments are
the same object and t - 1 otherwise (it puts them in a set). The call with one object twice, then the call
with two different objects, must compile twice: the aliasing relation between plain objects is guarded.
The test resets dynamo at its end.

torch asserts the results (1, then -1) and frame_count == 2. foo compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


class Box:
    pass


def foo(box_a, box_b, t):
    entries = {box_a, box_b}
    if len(entries) == 1:
        return t + 1
    return t - 1


counter = torch._dynamo.testing.CompileCounter()
x = torch.tensor(0)
with torch._dynamo.config.patch(use_lamba_guard_for_object_aliasing=False):
    compiled = torch.compile(foo, backend=counter, fullgraph=True)
    shared = Box()
    assert compiled(shared, shared, x).item() == 1
    assert compiled(Box(), Box(), x).item() == -1
    assert counter.frame_count == 2, counter.frame_count
torch._dynamo.reset()

_truth.write()
