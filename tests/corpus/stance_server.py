"""A model server with static shapes: warm up on the expected batch sizes, then lock the compiler so that
no request pays a compile; requests of other batch sizes are served eagerly."""
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
