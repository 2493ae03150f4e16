"""Scenario: fresh_module_instance

Cause: the compiled ``forward`` runs on many *different instances* of one
nn.Module class (12 residual blocks of the same class).  On torches that
specialize nn.Modules by identity (torch < 2.5, default
``inline_inbuilt_nn_modules=False``) each instance gets its own compile: the
guard is an ID_MATCH on ``self`` (identity).

What the user was doing: building a 12-layer MLP-mixer-style stack and putting
``@torch.compile`` on ``Block.forward`` so that "every block is compiled".

Expected on torch 2.13 (inline_inbuilt_nn_modules always True): ``forward``
compiles exactly once; parameters become graph inputs and all 12 instances
share one graph.  No recompiles.
Expected on torch 2.4.1 (default config): ``forward`` compiles 12 times, once
per instance (compile ids 0/0 .. 0/11), and *no* "Recompiling function" line
is printed, because each entry is keyed by the instance id (cache-size check
counts same-ID_MATCH entries only).  2.1.2: 12 compiles + 11 Recompiling lines.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    @torch.compile(backend="eager")
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Stack(nn.Module):
    def __init__(self, depth: int = 12, dim: int = 32):
        super().__init__()
        self.stem = nn.Linear(16, dim)  # so every block sees requires_grad=True input
        self.blocks = nn.ModuleList(Block(dim, 2 * dim) for _ in range(depth))
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Stack()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")
