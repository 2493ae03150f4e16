"""Label-smoothing schedule: the loss is a functools.partial whose label_smoothing changes every epoch;
each epoch also evaluates under no_grad.

Each epoch calls `step` with grad on and under no_grad, with a new `label_smoothing`. torch 2.13
compiles it 8 times and then hits the recompile limit (8): later calls run uncompiled. 6 of the 7
recompiles come from `label_smoothing`, a float keyword F.cross_entropy takes as a Python number, which
torch keeps specialized (automatic dynamic does not take it); grad mode doubles the entries. No line
removes that: guarddiag's hints say torch needs the number (few distinct values, or raise the limit)
and that grad mode at the limit is not "no fix needed".
"""
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
