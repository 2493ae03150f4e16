"""Port of RecompileUxTests.test_drop_cache_on_skip (pytorch test/dynamo/test_recompile_ux.py).

The test class runs with recompile_limit=1. `model(x, i) = x + i` is wrapped anew by torch.compile for
i = 0 and i = 1, with a backend that registers a finalizer on the compiled graph's forward and refuses to
be called twice. i=0 compiles; i=1 fails the guard on `i`, hits the limit (so the backend is not called
again) and the frame is skipped from then on - which drops its cache entry and frees the first graph.

torch asserts the finalizer ran. model: 1 compile, 1 attempt refused at the limit.
"""

import weakref

import _truth
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # RecompileUxTests.cache_limit

attached = False
triggered = False


def model(x, i):
    return x + i


def trigger():
    global triggered
    triggered = True


def compiler(gm, example_inputs):
    global attached
    forward = gm.forward
    if attached:
        raise AssertionError("Expected not attached")
    # A weakref.ref would keep the cycle from being collected promptly; the test uses finalize.
    weakref.finalize(forward, trigger)
    attached = True
    return forward


x = torch.randn(2)
for i in range(2):
    opt_model = torch.compile(model, backend=compiler)
    opt_model(x, i)

assert triggered

_truth.write()
