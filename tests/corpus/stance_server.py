"""A model server with static shapes: warm up on the expected batch sizes, then lock the compiler so that
no request pays a compile; requests of other batch sizes are served eagerly.

`torch.compile(model, dynamic=False)`: torch 2.13 compiles for batch 4, recompiles for batch 8 and keeps
it static (2 compiles); under `eager_on_recompile`, 5 of the 8 requests (3, 17, 1, 2, 33) match no
entry and run eagerly. guarddiag cannot tell whether the size stayed static by choice or because the
code needs it, and says so; its choices are the dynamic-sources setting for dim 0 (one compile, and
every request served compiled) or padding requests to a few bucket sizes.
"""
import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)).eval()
serve = torch.compile(model, dynamic=False)

with torch.no_grad():
    for bs in (4, 8):
        serve(torch.randn(bs, 16))  # warm-up
    torch.compiler.set_stance("eager_on_recompile")
    for bs in (8, 3, 4, 17, 8, 1, 2, 33):
        out = serve(torch.randn(bs, 16))
        print("request", bs, tuple(out.shape))
_truth.write()
