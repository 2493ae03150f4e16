"""A small, realistic training loop for the run-overhead and compare benchmarks.

An MLP classifier compiled with the eager backend, trained for a few hundred steps on random
data; every epoch ends on a short batch, so the shape changes and dynamo recompiles once
(and, with ``automatic_dynamic_shapes=False``, once more per new short batch size), the
way a real data loader without ``drop_last`` does. It runs a few seconds on 2 cores.
"""

import argparse

import torch
import torch.nn as nn


class Classifier(nn.Module):
    """Two hidden layers with LayerNorm and GELU, ten classes."""

    def __init__(self, features: int = 64, hidden: int = 256, classes: int = 10) -> None:
        super().__init__()
        self.hidden = nn.Sequential(
            nn.Linear(features, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
        )
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.hidden(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50, help="full batches per epoch")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Classifier()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        batches = [64] * args.steps + [64 - 7 * (epoch + 1)]  # a short last batch, different each epoch
        total = 0.0
        for size in batches:
            x = torch.randn(size, 64)
            y = torch.randint(0, 10, (size,))
            loss = loss_fn(compiled(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} mean loss {total / len(batches):.4f}")


if __name__ == "__main__":
    main()
