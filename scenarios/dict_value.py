"""Scenario: dict_value

Cause: a value in a config dict that the compiled function reads changes
(``cfg["activation"]`` goes "gelu" -> "relu" -> "silu").  The string is
used for Python control flow so Dynamo guards on ``cfg['activation'] == ...``.

What the user was doing: an activation-function sweep that reuses one
compiled ``mlp_forward`` and mutates the shared config dict between runs.

Expected on torch 2.13: ``mlp_forward`` compiles 3 times (one per
activation).  Failing guard: the dict item value ``L['cfg']['activation']``
(value).  Same count on 2.4.1.
"""
import torch
import torch.nn.functional as F

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}


@torch.compile(backend="eager")
def mlp_forward(x, w1, w2, cfg):
    h = x @ w1
    h = ACTIVATIONS[cfg["activation"]](h)
    if cfg["use_residual"]:
        h = h + x
    return h @ w2


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = {"activation": "gelu", "use_residual": True, "hidden": 16}
    w1, w2 = torch.randn(16, 16), torch.randn(16, 4)
    for act in ["gelu", "relu", "silu"]:
        cfg["activation"] = act
        for _step in range(3):
            out = mlp_forward(torch.randn(8, 16), w1, w2, cfg)
        print(f"{act}: out mean {out.mean().item():.4f}")
