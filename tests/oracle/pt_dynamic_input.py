"""Port of RecompileUxTests.test_dynamic_input (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=False and recompile_limit=2. `model(input) = input + input` is wrapped anew by
torch.compile and called 10 times on (bsz, 3, 4) tensors with a random batch size each time (seeded here, so
that no size repeats by chance). Two sizes compile, the third hits the limit: exactly one WARNING is logged
under torch._dynamo and it starts with "torch._dynamo hit config.recompile_limit"; later calls run without
compiling.

torch asserts frame_count == 2 and the single warning. model: 2 compiles, 1 attempt refused at the limit.

The test captures the warnings with assertLogs, which swaps out the logger's handlers; this script adds a
handler beside them instead, so that torch's log still reaches guarddiag.
"""

import logging

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # RecompileUxTests.cache_limit, patched to 2 below
torch._dynamo.config.automatic_dynamic_shapes = False  # the test's decorator
torch.manual_seed(0)


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def model(input):
    return input + input


expected_recompiles = 2
compile_counter = torch._dynamo.testing.CompileCounter()
capture = Capture()
dynamo_logger = logging.getLogger("torch._dynamo")
with torch._dynamo.config.patch(recompile_limit=expected_recompiles):
    dynamo_logger.addHandler(capture)
    try:
        for _ in range(10):
            bsz = torch.randint(low=0, high=1000, size=())
            x = torch.randn((bsz, 3, 4))
            opt_model = torch.compile(model, backend=compile_counter)
            opt_model(x)
    finally:
        dynamo_logger.removeHandler(capture)

assert compile_counter.frame_count == expected_recompiles, compile_counter.frame_count
messages = [r.getMessage() for r in capture.records]
assert len(messages) == 1, messages
assert messages[0].startswith("torch._dynamo hit config.recompile_limit"), messages[0]

_truth.write()
