"""A training loop that keeps its loss history by appending to a list inside the compiled step.

`train_step(xb, yb, history)` appends each step's loss to `history` itself. torch guards the length
of the list it appends to, and the list is one longer at every call: each step recompiles (length 0, 1,
2, ...) until the recompile limit (8), and later steps run uncompiled. Passing "the same length" cannot
help: the function makes it grow. The fix guarddiag gives moves the append out of the compiled step
(after each call, with the returned loss): one compile.
"""
import _truth
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
X, Y = torch.randn(256, 10), torch.randn(256, 1)


@torch.compile
def train_step(xb, yb, history):
    loss = F.mse_loss(model(xb), yb)
    history.append(loss.detach())
    return loss


history = []
for _ in range(12):
    idx = torch.randint(0, 256, (32,))
    opt.zero_grad()
    loss = train_step(X[idx], Y[idx], history)
    loss.backward()
    opt.step()
print("steps", len(history), "last loss", round(float(history[-1]), 4))
_truth.write()
