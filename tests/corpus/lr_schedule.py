"""A training loop whose compiled step takes the learning rate from a cosine schedule as a Python float.

`train_step(params, grads, lr)` is a hand-written SGD update with weight decay. The scheduler hands a
new float each step: torch 2.13 compiles for the first value, recompiles on the second (the float is
then dynamic) and compiles no more. CORPUS_FIX=1 passes the rate as a 0-dim tensor: one compile.
"""

import math
import os

import _truth
import torch

FIX = os.environ.get("CORPUS_FIX") == "1"


@torch.compile(backend="eager")
def train_step(params, grads, lr, weight_decay=0.01):
    for p, g in zip(params, grads):
        p.sub_(lr * (g + weight_decay * p))
    return params


def cosine_lr(step: int, total: int, base: float = 0.1) -> float:
    return 0.5 * base * (1 + math.cos(math.pi * step / total))


torch.manual_seed(0)
params = [torch.randn(16, 16), torch.randn(16)]
for step in range(6):
    grads = [torch.randn_like(p) for p in params]
    lr = cosine_lr(step, 6)
    train_step(params, grads, torch.tensor(lr) if FIX else lr)
print("final norm", round(float(params[0].norm()), 3))
_truth.write()
