"""A compiled `nn.Sequential` MLP run on batches of varying size and then on a half-precision copy.

Compiling an `nn.Sequential` compiles torch's `inner` wrapper (torch/_dynamo/external_utils.py), not a
function of the user's. The batch size changes once (automatic dynamic makes it dynamic), then the
input dtype changes to bfloat16 with a bfloat16 copy of the model.
"""

import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 3))
compiled = torch.compile(mlp, backend="eager")
for batch in (8, 16, 32):
    compiled(torch.randn(batch, 12))
half = torch.compile(mlp.to(torch.bfloat16), backend="eager")
print(half(torch.randn(8, 12, dtype=torch.bfloat16)).dtype)
_truth.write()
