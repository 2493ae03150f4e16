"""Hooks registered before the compiled module's first call: compiled code runs them.

One forward hook goes on the model before `torch.compile`; a pre-hook goes on a layer after
`torch.compile` (and after another function compiled) but before the compiled model's first call.
torch traces both into the graph, so both run on every call and guarddiag must not warn. The script
prints how many times each ran.
"""

import _truth
import torch
import torch.nn as nn


@torch.compile(backend="eager")
def normalize(x):
    return (x - x.mean()) / (x.std() + 1e-5)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
outputs = []
model.register_forward_hook(lambda mod, inp, out: outputs.append(out.shape))
x = normalize(torch.randn(4, 8))
compiled = torch.compile(model, backend="eager")
inputs = []
model[2].register_forward_pre_hook(lambda mod, args: inputs.append(args[0].shape))
for _ in range(3):
    compiled(x)
print("forward hook ran:", len(outputs), "pre-hook ran:", len(inputs))
_truth.write()
