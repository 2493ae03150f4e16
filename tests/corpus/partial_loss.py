"""Label-smoothing schedule: the loss is a functools.partial whose label_smoothing changes every epoch;
each epoch also evaluates under no_grad."""
import functools

import _truth
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
X, y = torch.randn(64, 16), torch.randint(0, 4, (64,))


@torch.compile
def step(xb, yb, loss_fn):
    return loss_fn(model(xb), yb)


for epoch in range(8):
    loss_fn = functools.partial(F.cross_entropy, label_smoothing=0.2 * (1 - epoch / 8))
    loss = step(X, y, loss_fn)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        val = step(X, y, loss_fn)
    print(epoch, round(float(loss), 4), round(float(val), 4))
_truth.write()
