"""Port of RecompileUxTests.test_multiple_guard_fails (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=32. `f(x) = relu(x)` through torch._dynamo.optimize("eager", guard_fail_fn=..., dynamic=False)
on sizes 8..12. The fifth call must report the failed size check of each of the four earlier entries
("tensor 'x' size mismatch at index 0. expected 11, actual 12", ... expected 8 ...).

torch asserts the four reasons (no count assertion). f compiles 5 times.
"""

import _truth
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 32  # the test's decorator

failure_reasons = []


def guard_fail_fn(failure):
    failure_reasons.append(failure[0])


def f(x):
    return torch.relu(x)


opt_f = torch._dynamo.optimize(backend="eager", guard_fail_fn=guard_fail_fn, dynamic=False)(f)
for i in range(5):
    failure_reasons.clear()
    opt_f(torch.randn(8 + i))

failure_str = "\n".join(failure_reasons)
for expected in (11, 10, 9, 8):
    line = f"tensor 'x' size mismatch at index 0. expected {expected}, actual 12"
    assert line in failure_str, (line, failure_str)

_truth.write()
