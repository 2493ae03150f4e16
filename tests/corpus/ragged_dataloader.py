"""Training a small classifier from a DataLoader whose last batch is short (100 samples, batch 32).

Batches of 32, 32, 32 and 4, two epochs; `loss.backward()` inside the compiled step breaks the graph.
torch 2.13 compiles `train_step` for batch 32 and recompiles on the batch of 4 (`xb` and `yb` at dim 0;
automatic dynamic then makes both dynamic): 2 compiles, and the code after the break is skipped (nothing
to compile). Each batch is a new tensor: guarddiag's hint marks dim 0 of `xb` and `yb` with
`maybe_mark_dynamic` before each call (or names them in the dynamic-sources setting): one compile.
"""
import _truth
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(100, 20)
y = (X.sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=False)

model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile
def train_step(xb, yb):
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    return loss


for epoch in range(2):
    total = 0.0
    for xb, yb in loader:
        opt.zero_grad()
        total += float(train_step(xb, yb))
        opt.step()
    print("epoch", epoch, round(total, 3))
_truth.write()
