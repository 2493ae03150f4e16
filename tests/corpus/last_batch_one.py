"""Scoring a dataset of 129 samples in batches of 64: the last batch holds a single sample.

torch compiles the scorer for batch 64 and recompiles for the batch of 1: torch specializes sizes 0 and 1,
so even a dynamic batch dim would not cover it, and automatic dynamic does not make a dim dynamic on a
size of 1. Two epochs: 2 compiles. The fix guarddiag gives makes the batch dim dynamic from the first
compile and turns on size-oblivious backed sizes, so that the size-1 batch reuses the entry: one compile.
"""
import _truth
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(129, 24))
loader = DataLoader(data, batch_size=64)
scorer = nn.Sequential(nn.Linear(24, 48), nn.LayerNorm(48), nn.GELU(), nn.Linear(48, 1)).eval()


@torch.compile
def score(xb):
    return torch.sigmoid(scorer(xb)).squeeze(-1)


with torch.no_grad():
    for epoch in range(2):
        scores = torch.cat([score(xb) for (xb,) in loader])
        print("epoch", epoch, scores.shape[0], round(float(scores.mean()), 4))
_truth.write()
