"""A hook added late to a module that is not part of compiled code: it runs, eagerly.

The encoder is compiled and called; afterwards the script adds a forward hook to a separate head that
runs eagerly. The hook runs on every call of the head, so guarddiag must not warn. The script prints
how many outputs the hook saw.
"""

import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)
encoder = torch.compile(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), backend="eager")
head = nn.Linear(8, 2)
x = torch.randn(4, 8)
encoder(x)

seen = []
head.register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
for _ in range(3):
    head(encoder(x))
print("outputs seen by the head's hook:", len(seen))
_truth.write()
