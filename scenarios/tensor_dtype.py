"""Scenario: tensor_dtype

Cause: the same compiled function receives tensors of different dtypes
(float32, then bfloat16, then float64).  Tensor guards check dtype, so each
new dtype is a recompile (tensor).

What the user was doing: an attention-score helper used by a float32
training loop, then by a bfloat16 "low precision eval" pass, and by a
float64 numerical gradient check.

Expected on torch 2.13: ``attention_scores`` compiles 3 times (fp32, bf16,
fp64).  Failing guard: ``tensor 'q' dtype mismatch. expected Float, actual
BFloat16`` (tensor).  Same count on 2.4.1.
"""
import math

import torch


@torch.compile(backend="eager")
def attention_scores(q, k, v):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


def batch(dtype):
    return [torch.randn(2, 4, 8, 16).to(dtype) for _ in range(3)]


if __name__ == "__main__":
    torch.manual_seed(0)
    for phase, dtype in [("train", torch.float32), ("eval-bf16", torch.bfloat16),
                         ("gradcheck", torch.float64), ("train", torch.float32)]:
        for _step in range(2):
            out = attention_scores(*batch(dtype))
        print(f"{phase}: dtype={out.dtype} mean {out.float().mean().item():.4f}")
