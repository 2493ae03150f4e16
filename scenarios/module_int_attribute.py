"""Scenario: module_int_attribute

Cause: an int attribute of the module (``self.layer_idx``) differs between
layers of one class.  Python ints stored on nn.Modules are specialized
(``allow_unspec_int_on_nn_module=False``), so the guard
``self.layer_idx == k`` fails for each new layer (value).

What the user was doing: a decoder where each layer scales its residual by
``1 / sqrt(2 * (layer_idx + 1))`` (a common depth-scaled init/residual trick)
and the compiled ``forward`` is shared by all layers.

Expected on torch 2.13: ``DecoderLayer.forward`` compiles 6 times (one per
layer_idx 0..5), then every later step hits the cache.  Recompile reason:
``self.layer_idx == 0`` (value guard on the int attribute).
On torch 2.4.1 the module is ID_MATCHed, so the failing guard is the
identity of ``self`` instead and there are no "Recompiling" lines.
"""
import math

import torch
import torch.nn as nn


class DecoderLayer(nn.Module):
    def __init__(self, layer_idx: int, dim: int = 32):
        super().__init__()
        self.layer_idx = layer_idx
        self.proj = nn.Linear(dim, dim)

    @torch.compile(backend="eager")
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        residual_scale = 1.0 / math.sqrt(2 * (self.layer_idx + 1))
        return h + residual_scale * torch.tanh(self.proj(h))


if __name__ == "__main__":
    torch.manual_seed(0)
    layers = nn.ModuleList(DecoderLayer(i) for i in range(6))
    with torch.no_grad():
        for step in range(3):
            h = torch.randn(4, 32)
            for layer in layers:
                h = layer(h)
            print(f"step {step} out-norm {h.norm().item():.3f}")
