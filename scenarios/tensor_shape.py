"""Scenario: tensor_shape

Cause: the input batch size changes (tensor shape).  With automatic dynamic
shapes (default), the first new size triggers ONE recompile that marks the
batch dimension dynamic; later sizes reuse the dynamic graph.  A batch of
size 1 is special (0/1 specialization) and gets its own static graph.

What the user was doing: training with batch 32, the last (ragged) batch of
the epoch is 20, later batch 48 from a bigger loader, and finally single
sample inference (batch 1).

Expected on torch 2.13: ``train_step`` compiles 3 times: static [32, ...],
then dynamic batch (reason: ``tensor 'x' size mismatch at index 0. expected
32, actual 20``; dynamic_shape), then batch 1 (reason mentions size 1 /
the dynamic guard ``2 <= L['x'].size()[0]``).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)


@torch.compile(backend="eager")
def train_step(x, y):
    logits = model(x)
    return F.cross_entropy(logits, y)


if __name__ == "__main__":
    torch.manual_seed(0)
    for step, batch in enumerate([32, 32, 32, 20, 48, 32, 1]):
        x, y = torch.randn(batch, 20), torch.randint(0, 3, (batch,))
        loss = train_step(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} batch {batch} loss {loss.item():.4f}")
