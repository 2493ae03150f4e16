"""A train/eval loop: a compiled classifier with BatchNorm and Dropout, trained for a few steps, then
evaluated every epoch under `model.eval()` and `torch.no_grad()`, then trained again.

Switching to evaluation changes two things the compiled forward depends on: the `training` flag of
the module and its submodules, and grad mode. torch 2.13 compiles forward once for training and once
for evaluation; the evaluation compile fails both the grad-mode guard and the `training` guards of
the first entry. Removing `torch.no_grad()` still recompiles (the `training` flags differ), so
`training` is the change that decides.
"""

import _truth
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


torch.manual_seed(0)
model = Classifier()
compiled = torch.compile(model, backend="eager")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 20), torch.randint(0, 4, (32,))
for epoch in range(2):
    model.train()
    for _ in range(3):
        loss = nn.functional.cross_entropy(compiled(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (compiled(x).argmax(-1) == y).float().mean()
    print(f"epoch {epoch}: loss {loss.item():.3f} acc {acc.item():.2f}")
_truth.write()
