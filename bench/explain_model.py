"""A model of N residual blocks for the explain benchmark (issue 18), compiled with the eager backend.

Each block is Linear + LayerNorm with an int attribute read in ``forward``, so every block adds
a parameter pair, two submodules and a pinned int to each guard listing: the listing grows
linearly with N. The model recompiles on purpose a few times: an int attribute of the top module
twice (value), grad mode (global state) and the batch size (dynamic shape), 5 compiles in all.

Run it under ``bench/make_explain_logs.py``, which sets TORCH_LOGS and keeps the log.
"""

import argparse

import torch
import torch.nn as nn


class Block(nn.Module):
    """h + LayerNorm(Linear(h)) * (index % 2 + 1): two submodules and an int attribute."""

    def __init__(self, dim: int, index: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.index = index  # an int read in forward: dynamo pins its value

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.norm(self.lin(h)) * (self.index % 2 + 1)


class Stack(nn.Module):
    """``blocks`` residual blocks and an int ``scale`` that the benchmark changes to recompile."""

    def __init__(self, blocks: int, dim: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim, i) for i in range(blocks))
        self.scale = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * self.scale
        for block in self.blocks:
            h = block(h)
        return h


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=16, help="residual blocks (default 16)")
    parser.add_argument("--dim", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Stack(args.blocks, args.dim)
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(4, args.dim)
    compiled(x)
    for scale in (2, 3):  # value: self.scale == k
        model.scale = scale
        compiled(x)
    with torch.no_grad():  # global state: grad mode
        compiled(x)
    compiled(torch.randn(6, args.dim))  # dynamic shape: batch 4 -> 6
    print("compiled calls done")


if __name__ == "__main__":
    main()
