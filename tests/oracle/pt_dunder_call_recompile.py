"""Port of RecompileTests.test_dunder_call_recompile (pytorch test/dynamo/test_recompiles.py).

`f(x, foo)` calls `foo(x)`, foo an instance of a class with `__call__`. Two instances share one compile;
replacing `Foo.__call__` on the class invalidates it and f recompiles once.

torch asserts frame_count 1, then 2. f compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


class Foo:
    def __call__(self, x):
        return x + 1


counter = torch._dynamo.testing.CompileCounter()


@torch.compile(backend=counter)
def f(x, foo):
    return foo(x)


x = torch.ones(2)
foo1 = Foo()
foo2 = Foo()
f(x, foo1)
f(x, foo2)
assert counter.frame_count == 1, counter.frame_count  # no recompilation for another instance

Foo.__call__ = lambda self, x: x + 2
f(x, foo1)
assert counter.frame_count == 2, counter.frame_count  # one recompilation for the new __call__

_truth.write()
