"""A sampler whose settings live in a dataclass config that the script sweeps.

`cfg.top_k` takes 3, 5, 8, 10. torch 2.13 compiles `sample_scores` for 3, recompiles on 5 (automatic
dynamic then makes the int dynamic) and compiles no more: 2 compiles. `cfg` is a dataclass, not an
nn.Module: allow_unspec_int_on_nn_module changes nothing here. guarddiag's hint names `L['cfg'].top_k`
in the dynamic-sources setting: one compile.
"""
from dataclasses import dataclass

import _truth
import torch

torch.manual_seed(0)


@dataclass
class SampleConfig:
    top_k: int = 5
    temperature: float = 1.0


@torch.compile
def sample_scores(logits, cfg):
    scaled = logits / cfg.temperature
    vals, idx = scaled.topk(cfg.top_k, dim=-1)
    return torch.softmax(vals, dim=-1), idx


logits = torch.randn(4, 50)
for k in (3, 5, 8, 10):
    cfg = SampleConfig(top_k=k, temperature=0.7)
    p, idx = sample_scores(logits, cfg)
    print(k, round(float(p.max()), 4))
_truth.write()
