"""Scenario: float_hyperparameter

Cause: a Python float hyperparameter (the learning rate from a cosine
schedule) is passed as an argument and changes every step.

What the user was doing: a hand-written compiled SGD-with-momentum update
``sgd_update(param, grad, buf, lr)`` driven by a cosine LR schedule.

Expected on torch 2.13 (``specialize_float=False``): ``sgd_update``
compiles 2 times: the 2nd lr value fails the guard ``L['lr'] == 0.1``
and the float becomes dynamic (dynamic_shape/value: automatic dynamic
float); no further recompiles.
Expected on torch 2.4.1 (``specialize_float=True``): every new lr is a
recompile; after 8 compiles ``cache_size_limit`` is hit and the function
falls back to eager (value).  torch 2.1.2 (limit 64): 12 compiles.
"""
import math

import torch


@torch.compile(backend="eager")
def sgd_update(param, grad, buf, lr: float, momentum: float = 0.9):
    buf.mul_(momentum).add_(grad)
    param.sub_(lr * buf)
    return param.norm()


if __name__ == "__main__":
    torch.manual_seed(0)
    target = torch.randn(64)
    param, buf = torch.zeros(64), torch.zeros(64)
    total_steps = 12
    for step in range(total_steps):
        lr = 0.05 + 0.05 * math.cos(math.pi * step / total_steps)
        grad = 2 * (param - target)
        norm = sgd_update(param, grad, buf, lr)
        print(f"step {step} lr {lr:.4f} |param| {norm.item():.4f}")
