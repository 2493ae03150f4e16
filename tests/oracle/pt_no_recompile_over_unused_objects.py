"""Port of RecompileTests.test_no_recompile_over_unused_objects (pytorch test/dynamo/test_recompiles.py).

Regression test modelled on ComfyUI-GGUF: `apply_patches(f, x, keys)` (fullgraph=True) loops over a list of
(str, int) pairs, collects the ints into a list and passes the last key and the list to `f`, which ignores
both. A second call with different keys and ints must not recompile: values nobody uses are not guarded.

torch asserts frame_count 1 after each call. apply_patches compiles once.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True

counter = torch._dynamo.testing.CompileCounter()


def f(x, key, patches):
    return x * x + 1


@torch.compile(backend=counter, fullgraph=True)
def apply_patches(f, x, keys):
    patches = []
    for key, patch in keys:  # noqa: B007 - key is read after the loop, as in the test
        patches.append(patch)
    x = f(x, key, patches)
    return x


x = torch.rand(10)
apply_patches(f, x, [("a", 1), ("b", 2)])
assert counter.frame_count == 1, counter.frame_count
apply_patches(f, x, [("c", 3), ("d", 4)])
assert counter.frame_count == 1, counter.frame_count

_truth.write()
