"""Port of RecompileTests.test_aliasing_guard_failures_with_globals (pytorch test/dynamo/test_recompiles.py).

`foo(a)` adds the tensor `g1` to `a` in place and returns `g2 + 1` (`g1`, `g2` are free variables of the
test, module globals here). A first call with an unrelated tensor compiles; then `g1` is rebound and `foo`
is called with `g1` itself, so the argument aliases the global: the guard fails and foo recompiles.

torch asserts frame_count 1, then 2. foo compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

g1 = torch.randn([3])
g2 = torch.randn([3])


def foo(a):
    a.add_(g1)
    return g2 + 1


counter = torch._dynamo.testing.CompileCounter()
compiled_foo = torch.compile(foo, backend=counter, fullgraph=True)

z = torch.randn([3])
assert torch.equal(compiled_foo(z.detach().clone()), foo(z.detach().clone()))
assert counter.frame_count == 1, counter.frame_count

g1 = g1.detach().clone()
first = compiled_foo(g1)
g1 = g1.detach().clone()
second = compiled_foo(g1)
assert torch.equal(first, second)
assert counter.frame_count == 2, counter.frame_count  # the argument aliases the global now

_truth.write()
