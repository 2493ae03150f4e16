"""Scenario: list_length

Cause: a list of tensors whose length changes between calls.  Dynamo guards
on the list length (container) and unrolls the Python loop over it.

What the user was doing: a feature-pyramid fusion step where the number of
pyramid levels depends on the input resolution (2, 3 or 4 levels).

Expected on torch 2.13: ``fuse_pyramid`` compiles 3 times (lengths 2, 3, 4);
repeated lengths hit the cache.  Failing guard: ``len(L['features']) == 2``
(container).  Same count on 2.4.1.
"""
import torch
import torch.nn.functional as F


@torch.compile(backend="eager")
def fuse_pyramid(features, out_size: int = 8):
    fused = torch.zeros(features[0].shape[0], features[0].shape[1], out_size, out_size)
    for level, feat in enumerate(features):
        up = F.interpolate(feat, size=(out_size, out_size), mode="nearest")
        fused = fused + up / (level + 1)
    return fused


def make_pyramid(levels: int):
    return [torch.randn(2, 4, 8 // 2**i, 8 // 2**i) for i in range(levels)]


if __name__ == "__main__":
    torch.manual_seed(0)
    for levels in [2, 2, 3, 4, 3, 2]:
        out = fuse_pyramid(make_pyramid(levels))
        print(f"levels={levels} fused norm {out.norm().item():.3f}")
