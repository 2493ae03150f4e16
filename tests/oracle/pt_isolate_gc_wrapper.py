"""Port of IsolateRecompilesTests.test_isolate_recompiles_gc_wrapper (pytorch test/dynamo/test_recompile_ux.py).

An isolated wrapper of `f(x) = x.sin()` compiles size 3 and is then deleted and garbage-collected: its
cache entry stays (orphaned). A new isolated wrapper gets a fresh region and compiles size 3 again (2
entries). torch._dynamo.reset() then removes every entry.

torch asserts frame_count 1, entries 1, 1, frame_count 2, entries 2, then 0. f: 2 compiles.
"""

import gc

import _truth
import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


def num_cache_entries(code):
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))


counter = torch._dynamo.testing.CompileCounter()


def f(x):
    return x.sin()


opt_a = torch.compile(f, backend=counter, isolate_recompiles=True)
opt_a(torch.randn(3))
assert counter.frame_count == 1, counter.frame_count
assert num_cache_entries(f) == 1

del opt_a
gc.collect()
assert num_cache_entries(f) == 1  # the orphaned entry stays

opt_b = torch.compile(f, backend=counter, isolate_recompiles=True)
opt_b(torch.randn(3))
assert counter.frame_count == 2, counter.frame_count
assert num_cache_entries(f) == 2

torch._dynamo.reset()
assert num_cache_entries(f) == 0

_truth.write()
