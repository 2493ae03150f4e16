"""Regional compilation: each block of a residual stack is compiled on its own (torch.compile(block)), the
way large models are compiled to keep compile time down; each block scales its residual branch by
1/sqrt(2 * (layer_idx + 1)) from its own `self.layer_idx`.

The blocks share one code object, and torch keeps int attributes of nn.Modules specialized
(allow_unspec_int_on_nn_module=False): `self.layer_idx == 0` fails for each other block, so the 6 blocks
compile 6 times, and every later step hits the cache. The fix guarddiag gives sets
allow_unspec_int_on_nn_module: the int becomes dynamic and the blocks share their compiles.
"""
import math

import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        scale = 1.0 / math.sqrt(2 * (self.layer_idx + 1))
        return x + scale * self.ff(self.norm(x))


blocks = nn.ModuleList(Block(32, i) for i in range(6)).eval()
for i, block in enumerate(blocks):
    blocks[i] = torch.compile(block)

with torch.no_grad():
    for step in range(3):
        x = torch.randn(8, 32)
        for block in blocks:
            x = block(x)
        print("step", step, round(float(x.norm()), 3))
_truth.write()
