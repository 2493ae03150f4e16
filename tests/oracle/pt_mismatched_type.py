"""Port of RecompileUxTests.test_mismatched_type (pytorch test/dynamo/test_recompile_ux.py).

The test class runs with recompile_limit=1. `func(a, b) = a + b` is warmed up with two tensors, then a
fresh torch.compile wrapper calls it with an int for `b`. That hits the limit of 1: exactly one WARNING is
logged under torch._dynamo, naming the type check that failed on `b`.

torch asserts the single warning containing "expected type of 'b' to be <class 'torch.Tensor'>, but found
<class 'int'>" (older versions of the test, and torch 2.13 as measured: "expected type of 'b' to be a tensor type, ' but
found <class 'int'>"; this script accepts either). func: 1 compile, 1 attempt refused at the limit.

The test captures warnings with assertLogs (which swaps out the logger's handlers); this script adds a
handler beside them instead, so that torch's log still reaches guarddiag.
"""

import logging

import _truth
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # RecompileUxTests.cache_limit


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


a = torch.rand(3, 4, 5)
b = torch.rand(3, 4, 5)


def func(a, b):
    return a + b


opt_func = torch.compile(func, backend="eager")
opt_func(a, b)  # warm up

capture = Capture()
dynamo_logger = logging.getLogger("torch._dynamo")
dynamo_logger.addHandler(capture)
try:
    opt_func = torch.compile(func, backend="eager")
    opt_func(a, 1)
finally:
    dynamo_logger.removeHandler(capture)

messages = [r.getMessage() for r in capture.records]
assert len(messages) == 1, messages
wanted = (
    "expected type of 'b' to be <class 'torch.Tensor'>, but found <class 'int'>",
    "expected type of 'b' to be a tensor type, ' but found <class 'int'>",
)
assert any(messages[0].find(w) > 0 for w in wanted), messages[0]

_truth.write()
