"""Training a small classifier from a DataLoader whose last batch is short (100 samples, batch 32)."""
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
