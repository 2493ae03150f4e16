"""Scenario: no_recompile (negative control)

Cause: none.  A small training loop with fixed batch shape, fixed dtype,
grad always enabled, and a config that never changes.

What the user was doing: training a tiny MLP regressor with a compiled
model forward and a compiled loss function for 20 steps.

Expected on torch 2.13: ``forward`` compiles once and ``regression_loss``
compiles once; no recompiles, no guard failures, no graph breaks.
Same on 2.4.1.
"""
import torch
import torch.nn as nn

CONFIG = {"hidden": 32, "huber_delta": 1.0, "steps": 20, "batch": 16}


class Regressor(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    @torch.compile(backend="eager")
    def forward(self, x):
        return self.net(x).squeeze(-1)


@torch.compile(backend="eager")
def regression_loss(pred, target):
    return torch.nn.functional.huber_loss(pred, target, delta=CONFIG["huber_delta"])


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Regressor(CONFIG["hidden"])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    true_w = torch.randn(6)
    for step in range(CONFIG["steps"]):
        x = torch.randn(CONFIG["batch"], 6)
        loss = regression_loss(model(x), x @ true_w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")
