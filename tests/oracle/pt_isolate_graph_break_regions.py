"""Port of IsolateRecompilesTests.test_isolate_recompiles_graph_break_independent_regions (pytorch test/dynamo/test_recompile_ux.py).

automatic_dynamic_shapes=False. `f(x)` computes x.sin(), breaks the graph (torch._dynamo.graph_break()) and
returns that + 1. Two isolated wrappers (dynamic=False) sharing an EagerAndRecordGraphs backend are called
with sizes 3 and 4 each: every region keeps its own entries for both the main frame and the resume frame.

torch asserts results and 8 graphs: 2 regions x 2 sizes x 2 frames, 4 with sin (main) and 4 with add
(resume). f: 4 compiles; its resume function: 4 compiles.
"""

import operator

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.automatic_dynamic_shapes = False  # the test's decorator


def count_graphs(graphs, node_op, target):
    return sum(any(n.op == node_op and n.target == target for n in gm.graph.nodes) for gm in graphs)


backend = torch._dynamo.testing.EagerAndRecordGraphs()


def f(x):
    a = x.sin()
    torch._dynamo.graph_break()
    return a + 1


opt_a = torch.compile(f, backend=backend, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend=backend, dynamic=False, isolate_recompiles=True)
x3 = torch.randn(3)
x4 = torch.randn(4)
for opt, x in ((opt_a, x3), (opt_b, x3), (opt_a, x4), (opt_b, x4)):
    assert torch.allclose(opt(x), x.sin() + 1)

assert len(backend.graphs) == 8, len(backend.graphs)
assert count_graphs(backend.graphs, "call_method", "sin") == 4
assert count_graphs(backend.graphs, "call_function", operator.add) == 4

_truth.write()
