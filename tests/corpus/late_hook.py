"""A forward hook registered on a module after it was compiled and called once.

Users add hooks late for logging, activation capture or debugging. With torch 2.13's defaults
(`skip_nnmodule_hook_guards=True`) the compiled forward does not guard on hooks: the hook added after
the first call never runs and nothing says so. The script prints how many activations the hook saw.
"""

import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
compiled = torch.compile(model, backend="eager")
x = torch.randn(4, 8)
compiled(x)

seen = []
model[0].register_forward_hook(lambda mod, inp, out: seen.append(out.detach()))
for _ in range(3):
    compiled(x)
print("activations captured by the hook:", len(seen))
_truth.write()
