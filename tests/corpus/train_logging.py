"""A training step that logs its loss with `.item()` from inside the compiled function.

`train_step(x, y, step)` calls `log.info("step %d loss %.4f", step, loss.item())`: `.item()` breaks
the graph, and the logging call runs in the code that resumes after the break, with `step` and the
loss as Python numbers. torch specializes the step number in `train_step` (one recompile, then
automatic dynamic) and the number handed to the resume function (one more). The fix guarddiag gives
moves the logging line out of the compiled step (after each call, with the returned loss): one
compile, no graph break.
"""
import logging

import _truth
import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(level=logging.INFO, format="%(message)s")
log = logging.getLogger("train")

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)


@torch.compile
def train_step(x, y, step):
    loss = F.mse_loss(model(x), y)
    log.info("step %d loss %.4f", step, loss.item())
    return loss


for step in range(6):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    opt.zero_grad()
    loss = train_step(x, y, step)
    loss.backward()
    opt.step()
_truth.write()
