"""Feature fusion over containers whose size and keys vary between calls.

`fuse(feats, weights)` sums a list of feature maps (its length varies: 2, 3, 4 inputs) scaled by a
dict of per-source weights (its keys vary with the sources present). Each new length and each new key
set recompiles. CORPUS_FIX=1 pads the list to a fixed length and passes the weights as one tensor.
"""

import os

import _truth
import torch

FIX = os.environ.get("CORPUS_FIX") == "1"


@torch.compile(backend="eager")
def fuse(feats, weights):
    out = torch.zeros_like(feats[0])
    for name, f in zip(weights, feats):
        out = out + weights[name] * f
    return out


@torch.compile(backend="eager")
def fuse_fixed(feats, weights):
    return (torch.stack(feats) * weights[:, None, None]).sum(0)


torch.manual_seed(0)
sources = ["rgb", "depth", "flow", "normals"]
for n in (2, 3, 4, 3):
    present = sources[:n]
    feats = [torch.randn(8, 8) for _ in present]
    if FIX:
        feats = feats + [torch.zeros(8, 8)] * (len(sources) - n)
        weights = torch.tensor([1.0 / n if i < n else 0.0 for i in range(len(sources))])
        out = fuse_fixed(feats, weights)
    else:
        out = fuse(feats, {name: 1.0 / n for name in present})
    print(n, "sources ->", round(float(out.abs().mean()), 4))
_truth.write()
