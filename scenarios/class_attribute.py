"""Scenario: class_attribute

Cause: a class attribute (``Cfg.norm_type``) read inside the compiled
function is changed by assigning to the class.  Dynamo guards on
``G['Cfg'].norm_type == ...`` (value).

What the user was doing: an experiment config kept as class attributes of
``Cfg`` (a common "settings class" pattern) and an ablation that changes
``Cfg.norm_type`` between runs.

Expected on torch 2.13 (and 2.1.2): ``normalize_features`` compiles 3 times
(value guard ``G['Cfg'].norm_type == 'layer'``).  torch 2.4.1 compiles ONCE:
no guard on the class attribute, the stale graph is silently reused.
"""
import torch


class Cfg:
    norm_type = "layer"
    eps = 1e-5
    dim = 32


@torch.compile(backend="eager")
def normalize_features(x):
    if Cfg.norm_type == "layer":
        return torch.nn.functional.layer_norm(x, (Cfg.dim,), eps=Cfg.eps)
    if Cfg.norm_type == "rms":
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + Cfg.eps)
    return x / (x.norm(dim=-1, keepdim=True) + Cfg.eps)


if __name__ == "__main__":
    torch.manual_seed(0)
    for norm_type in ["layer", "rms", "l2", "layer"]:
        Cfg.norm_type = norm_type
        for _step in range(3):
            out = normalize_features(torch.randn(8, Cfg.dim))
        print(f"norm={norm_type} out std {out.std().item():.4f}")
