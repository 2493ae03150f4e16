"""Port of IsolateRecompilesTests.test_isolate_recompiles_graph_break_per_region_limit (pytorch test/dynamo/test_recompile_ux.py).

recompile_limit=2, automatic_dynamic_shapes=False. `f(x)` computes x.sin(), breaks the graph and returns
that + 1; two isolated wrappers (dynamic=False) share an EagerAndRecordGraphs backend. Region A compiles
sizes 3 and 4 (main and resume frame each: 4 graphs); size 5 hits region A's limit on the main frame, which
then runs eagerly without calling a compiled resume function (no new graph); region B compiles size 3
(2 more graphs).

torch asserts 4, 4, 6 graphs (sin graphs 2, 2, 3; add graphs 2, 2, 3). f: 3 compiles and 1 attempt
refused at the limit; its resume function: 3 compiles.
"""

import operator

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True
torch._dynamo.config.recompile_limit = 2  # the test's decorator
torch._dynamo.config.automatic_dynamic_shapes = False


def count_graphs(graphs, node_op, target):
    return sum(any(n.op == node_op and n.target == target for n in gm.graph.nodes) for gm in graphs)


def expect_graphs(total, each):
    assert len(backend.graphs) == total, len(backend.graphs)
    assert count_graphs(backend.graphs, "call_method", "sin") == each
    assert count_graphs(backend.graphs, "call_function", operator.add) == each


backend = torch._dynamo.testing.EagerAndRecordGraphs()


def f(x):
    a = x.sin()
    torch._dynamo.graph_break()
    return a + 1


opt_a = torch.compile(f, backend=backend, dynamic=False, isolate_recompiles=True)
opt_b = torch.compile(f, backend=backend, dynamic=False, isolate_recompiles=True)

opt_a(torch.randn(3))
opt_a(torch.randn(4))
expect_graphs(4, 2)

opt_a(torch.randn(5))  # region A's limit: the main frame runs eagerly
expect_graphs(4, 2)

opt_b(torch.randn(3))  # region B compiles both frames
expect_graphs(6, 3)

_truth.write()
