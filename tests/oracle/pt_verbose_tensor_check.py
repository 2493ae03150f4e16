"""Port of RecompileUxTests.test_verbose_tensor_check (pytorch test/dynamo/test_recompile_ux.py).

The test class runs with recompile_limit=1. Six sub-cases, each after torch._dynamo.reset(): `func(a) =
torch.add(a, 4)` is compiled and warmed up on a (3, 4, 5) tensor, then a fresh torch.compile wrapper calls
it on a tensor that differs in size, stride, rank, dispatch keys (meta), dtype or requires_grad. Each miss
hits the limit of 1: exactly one WARNING is logged under torch._dynamo, and its "last reason" names the
tensor check that failed ("tensor 'a' size mismatch at index 0. expected 3, actual 2", ...).

torch asserts the single warning and its text per sub-case. func: 6 compiles and 6 attempts refused at the
limit, with 5 resets in between (compile ids restart at 0/0 each time).

The test captures warnings with assertLogs (which swaps out the logger's handlers); this script adds a
handler beside them instead, so that torch's log still reaches guarddiag.
"""

import logging

import _truth
import torch
import torch._dynamo
import torch._dynamo.utils

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 1  # RecompileUxTests.cache_limit


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def func(a):
    # The test picks an op whose meta implementation is all C++, to keep the warnings clean.
    return torch.add(a, 4)


def cache_fail_test(cached_input, missed_input, expected_failure):
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    opt_func = torch.compile(func, backend="eager")
    opt_func(cached_input)  # warm up

    capture = Capture()
    dynamo_logger = logging.getLogger("torch._dynamo")
    dynamo_logger.addHandler(capture)
    try:
        opt_func = torch.compile(func, backend="eager")
        opt_func(missed_input)
    finally:
        dynamo_logger.removeHandler(capture)
    messages = [r.getMessage() for r in capture.records]
    assert len(messages) == 1, messages
    assert messages[0].find(expected_failure) > 0, (expected_failure, messages[0])


a = torch.rand(3, 4, 5)
cache_fail_test(a, a[0:2, :, :], "tensor 'a' size mismatch at index 0. expected 3, actual 2")
cache_fail_test(
    a, a.clone().as_strided((3, 4, 5), stride=(1, 3, 12)), "tensor 'a' stride mismatch at index 0. expected 20, actual 1"
)
cache_fail_test(a, a[0, :, :], "tensor 'a' rank mismatch. expected 3, actual 2")
cache_fail_test(a, a.to("meta"), "tensor 'a' dispatch key set mismatch.")
cache_fail_test(a, a.to(torch.float16), "tensor 'a' dtype mismatch. expected Float, actual Half")
a_grad = a.clone()
a_grad.requires_grad = True
cache_fail_test(a, a_grad, "tensor 'a' requires_grad mismatch. expected requires_grad=0")

_truth.write()
