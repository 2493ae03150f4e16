"""A guard-heavy model for the benchmark: ~300 submodules, compiled with the eager backend.

It recompiles on purpose, once for each common cause, so its torch log is long and varied:
an int attribute of the module (value), grad mode (global_state), the parameters' dtype
(tensor), the batch size (dynamic_shape). A graph break in the middle of ``forward`` gives
dynamo a second frame (the resume function), so every cause shows on two frames.

Run it under ``bench/make_model_log.py``, which sets TORCH_LOGS and TORCH_TRACE.
"""

import argparse
import time

import torch
import torch.nn as nn


class Block(nn.Module):
    """Linear -> LayerNorm -> GELU -> Linear with a residual: four submodules plus itself."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.act = nn.GELU()
        self.down = nn.Linear(dim, dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.down(self.act(self.norm(self.up(h))))


class Tower(nn.Module):
    """``blocks`` blocks in two halves with a graph break between them."""

    def __init__(self, blocks: int, dim: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(blocks))
        self.head = nn.Linear(dim, dim)
        self.mode = 0  # an int attribute read in forward: dynamo specializes on its value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * (1.0 + self.mode)
        half = len(self.blocks) // 2
        for block in self.blocks[:half]:
            h = block(h)
        torch._dynamo.graph_break()
        for block in self.blocks[half:]:
            h = block(h)
        return self.head(h) * (1.0 + self.mode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=60, help="blocks of 5 modules each (default 60: 300 submodules)")
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--calls", type=int, default=0, help="then call it this many times more with its last input (cache hits)")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Tower(args.blocks, args.dim)
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(8, args.dim)
    print("modules:", sum(1 for _ in model.modules()))
    compiled(x)
    for mode in (1, 2):  # value: self.mode == k
        model.mode = mode
        compiled(x)
    with torch.no_grad():  # global_state: grad mode
        compiled(x)
    model.double()  # tensor: every parameter changes dtype
    compiled(x.double())
    last = torch.randn(16, args.dim, dtype=torch.float64)
    compiled(last)  # dynamic_shape: batch 8 -> 16
    print("compiled calls done")
    if args.calls:  # steady state: every call a cache hit (bench/guard_time_overhead.py)
        started = time.perf_counter()
        for _ in range(args.calls):
            compiled(last)
        print(f"hit calls: {(time.perf_counter() - started) / args.calls * 1e6:.1f} us per call")


if __name__ == "__main__":
    main()
