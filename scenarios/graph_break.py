"""Scenario: graph_break

Cause: a debug ``print`` inside the compiled ``forward`` is a graph break,
so Dynamo compiles the code before it (``forward``) and a resume function
``torch_dynamo_resume_in_forward_at_<line>`` for the code after it.  The
model is then also run under ``torch.no_grad()`` for evaluation, so BOTH
code objects recompile on grad mode (global_state).

What the user was doing: a classifier with a leftover debug print of the
encoded shape, trained for 3 steps and then evaluated.

Expected on torch 2.13: ``forward`` compiles 2 times and
``torch_dynamo_resume_in_forward_at_<N>`` compiles 2 times; failing
guard ``GLOBAL_STATE changed: grad_mode`` (global_state); one graph break
reason "print" / builtin print.  Same counts on 2.4.1.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 24), nn.ReLU())
        self.head = nn.Linear(24, 3)

    @torch.compile(backend="eager")
    def forward(self, x):
        h = self.encoder(x)
        print("debug: encoded batch", tuple(h.shape))
        return self.head(h)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _step in range(3):
        x, y = torch.randn(8, 10), torch.randint(0, 3, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        for _ in range(2):
            acc = (model(torch.randn(8, 10)).argmax(-1) == 0).float().mean()
    print(f"final loss {loss.item():.4f} acc {acc.item():.3f}")
