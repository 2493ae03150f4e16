"""Port of RecompileTests.test_simple_module_recompile (pytorch test/dynamo/test_recompiles.py).

A module (Linear then Dropout) is compiled with fullgraph=True and called 20 times in eval mode and 20 times
in train mode, alternating. The `training` flag is guarded: one graph per mode, no more.

torch asserts frame_count == 2. forward compiles 2 times.
"""

import _truth
import torch
import torch._dynamo
import torch._dynamo.testing

torch._dynamo.config.suppress_errors = False
torch._dynamo.config.nested_graph_breaks = True


class SimpleDropout(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dropout = torch.nn.Dropout(0.5)
        self.linear = torch.nn.Linear(10, 1)

    def forward(self, x):
        return self.dropout(self.linear(x))


model = SimpleDropout()
x = torch.randn(10)
counter = torch._dynamo.testing.CompileCounter()
model = torch.compile(model, backend=counter, fullgraph=True)
for _ in range(20):
    model.eval()
    model(x)
    model.train()
    model(x)
assert counter.frame_count == 2, counter.frame_count

_truth.write()
