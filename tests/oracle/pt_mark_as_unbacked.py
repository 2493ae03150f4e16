"""Port of RecompileTests.test_automatic_dynamic_shapes_mark_as_unbacked (pytorch test/dynamo/test_recompiles.py).

automatic_dynamic_shapes_mark_as="unbacked". `f(x) = x * x` is called on sizes 3, 2, 1, 0. The second size
makes the dimension dynamic, and as an unbacked size it also covers the sizes 1 and 0 (which a backed size
would specialize on).

torch asserts frame_count == 2 ("not three or four!"). f compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes_mark_as = "unbacked"  # the test's decorator

counter = torch._dynamo.testing.CompileCounter()


@torch.compile(backend=counter)
def f(x):
    return x * x


for size in (3, 2, 1, 0):
    f(torch.randn(size))
assert counter.frame_count == 2, counter.frame_count

_truth.write()
