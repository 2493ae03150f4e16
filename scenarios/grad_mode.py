"""Scenario: grad_mode

Cause: the same compiled function is called with grad enabled (training)
and under ``torch.no_grad()`` (validation).  Grad mode is part of Dynamo's
global-state guard (global_state).

What the user was doing: a classic train/validate loop that reuses the
compiled ``compute_loss`` for both phases.

Expected on torch 2.13: ``compute_loss`` compiles 2 times (grad on, grad
off); later epochs reuse both.  Failing guard: ``GLOBAL_STATE changed:
grad_mode`` (global_state).  Same count on 2.4.1.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(backend="eager")
def compute_loss(x, y):
    return F.mse_loss(model(x), y)


if __name__ == "__main__":
    torch.manual_seed(0)
    for epoch in range(2):
        for _step in range(3):
            loss = compute_loss(torch.randn(16, 12), torch.randn(16, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = sum(compute_loss(torch.randn(16, 12), torch.randn(16, 1)).item()
                      for _ in range(2)) / 2
        print(f"epoch {epoch} train {loss.item():.4f} val {val:.4f}")
