"""Diffusion-style sampling: a plain Python scheduler object carries the current timestep, and the compiled
denoising step reads `sched.t` to pick its noise level.

`Scheduler` is a plain class (not an nn.Module, not a dataclass). torch guards `sched.t == 9` in the
first compile; the next timestep recompiles once, then automatic dynamic makes the int dynamic and the
other timesteps reuse that entry: 2 compiles. `allow_unspec_int_on_nn_module` would change nothing here
(it only concerns nn.Module ints); the fix guarddiag gives names `L['sched'].t` in the dynamic-sources
setting: one compile.
"""
import _truth
import torch
import torch.nn as nn


class Scheduler:
    def __init__(self, steps):
        self.steps = steps
        self.t = steps - 1
        self.alphas = torch.linspace(0.99, 0.5, steps)

    def step(self):
        self.t -= 1


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(16, 64), nn.SiLU(), nn.Linear(64, 16)).eval()


@torch.compile
def denoise(x, sched):
    a = sched.alphas[sched.t]
    eps = net(x)
    return (x - (1 - a).sqrt() * eps) / a.sqrt()


sched = Scheduler(10)
x = torch.randn(4, 16)
with torch.no_grad():
    while sched.t >= 0:
        x = denoise(x, sched)
        sched.step()
print("sample norm", round(float(x.norm()), 3))
_truth.write()
