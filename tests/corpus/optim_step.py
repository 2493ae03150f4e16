"""Two compiled optimizer steps: `torch.optim.AdamW.step` wrapped in torch.compile, and a hand-written
momentum SGD under `@torch.no_grad()` compiled as a function.

`@torch.no_grad()` wraps the function in torch's own `inner` (torch/_dynamo/external_utils.py): the code
object torch compiles is that wrapper's, shared by every no_grad-decorated compiled function. The
learning rate of the hand-written step is changed by a step decay every 2 steps (a Python float).
"""

import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
adamw = torch.optim.AdamW(model.parameters(), lr=1e-3)


@torch.compile(backend="eager")
def adamw_step():
    adamw.step()


@torch.compile(backend="eager")
@torch.no_grad()
def sgd_momentum(params, bufs, lr, momentum=0.9):
    for p, b in zip(params, bufs):
        b.mul_(momentum).add_(p.grad)
        p.add_(b, alpha=-lr)


x, y = torch.randn(64, 16), torch.randn(64, 1)
params = list(model.parameters())
bufs = [torch.zeros_like(p) for p in params]
lr = 0.05
for step in range(6):
    loss = nn.functional.mse_loss(model(x), y)
    model.zero_grad()
    loss.backward()
    if step % 2 == 0:
        adamw_step()
    else:
        sgd_momentum(params, bufs, lr)
    if step % 2 == 1:
        lr *= 0.5
print("loss", round(loss.item(), 4))
_truth.write()
