"""Scenario: module_bool_attribute

Cause: a bool flag attribute on the module (``self.use_label_noise``) is
toggled between epochs.  The flag is used in Python control flow, so Dynamo
specializes on it and guards on its value.

What the user was doing: a training loop that turns a regularization trick
on for even epochs and off for odd epochs by flipping ``model.use_label_noise``.

Expected on torch 2.13: ``forward`` compiles 2 times (flag True, then flag
False); later epochs reuse the two cache entries.  Failing guard: the value
of ``self.use_label_noise`` (value).  2.4.1: 2.  2.1.2: 1 (stale, no guard).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class NoisyClassifier(nn.Module):
    def __init__(self, dim: int = 16, classes: int = 5):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, classes))
        self.use_label_noise = True

    @torch.compile(backend="eager")
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.body(x)
        if self.use_label_noise:
            logits = logits + 0.1 * torch.randn_like(logits)
        return logits


if __name__ == "__main__":
    torch.manual_seed(0)
    model = NoisyClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(4):
        model.use_label_noise = epoch % 2 == 0
        for _ in range(3):
            x, y = torch.randn(8, 16), torch.randint(0, 5, (8,))
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} noise={model.use_label_noise} loss {loss.item():.4f}")
