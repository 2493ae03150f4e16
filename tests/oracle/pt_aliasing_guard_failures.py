"""Port of RecompileTests.test_aliasing_guard_failures (pytorch test/dynamo/test_recompiles.py).

`foo(a, b, c)` mutates `a` in place and returns `c + 1`; compiled with fullgraph=True. Calls with three
distinct tensors (twice, in a different order) reuse the first compile; a call where `a` and `c` are the
same tensor fails the no-aliasing guard and recompiles.

torch asserts frame_count 1, 1, then 2 (results equal eager each time). foo compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def foo(a, b, c):
    a.add_(b)
    return c + 1


def fresh(t):
    return t.detach().clone()


counter = torch._dynamo.testing.CompileCounter()
compiled_foo = torch.compile(foo, backend=counter, fullgraph=True)
x, y, z = torch.randn([3]), torch.randn([3]), torch.randn([3])

assert torch.equal(compiled_foo(fresh(x), fresh(y), fresh(z)), foo(fresh(x), fresh(y), fresh(z)))
assert counter.frame_count == 1, counter.frame_count

assert torch.equal(compiled_foo(fresh(z), fresh(y), fresh(x)), foo(fresh(z), fresh(y), fresh(x)))
assert counter.frame_count == 1, counter.frame_count  # no recompile: still no aliasing

shared = fresh(x)
compiled_result = compiled_foo(shared, fresh(y), shared)
shared = fresh(x)
second_result = compiled_foo(shared, fresh(y), shared)
assert torch.equal(compiled_result, second_result)
assert counter.frame_count == 2, counter.frame_count  # a and c alias now: recompiled

_truth.write()
