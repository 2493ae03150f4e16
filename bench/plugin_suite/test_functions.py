"""Small numeric functions compiled the way a library compiles its helpers (12 tests)."""
import math

import pytest
import torch
from _suite import budget


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def stable_softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def rms_norm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def horner(x, coeffs=(0.5, -1.0, 0.25, 2.0, -0.125)):
    out = torch.zeros_like(x)
    for c in coeffs:
        out = out * x + c
    return out


def masked_mean(x, mask):
    m = mask.to(x.dtype)
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)


def cosine_similarity(a, b, eps=1e-8):
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(eps)


def swish_clamp(x, beta=1.5):
    return torch.clamp(x * torch.sigmoid(beta * x), -3.0, 3.0)


def rotary(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def smooth_l1(pred, target, beta=1.0):
    diff = (pred - target).abs()
    return torch.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta).mean()


def onehot_cross_entropy(logits, labels):
    onehot = torch.nn.functional.one_hot(labels, logits.shape[-1]).to(logits.dtype)
    return -(onehot * torch.log_softmax(logits, dim=-1)).sum(-1).mean()


def pairwise_sq_dist(a, b):
    return (a.unsqueeze(1) - b.unsqueeze(0)).pow(2).sum(-1)


def check(fn, *make_args):
    compiled = torch.compile(fn, backend="eager")
    for _ in range(3):
        args = [make() for make in make_args]
        torch.testing.assert_close(compiled(*args), fn(*args))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_gelu_tanh():
    check(gelu_tanh, lambda: torch.randn(64, 32))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_stable_softmax():
    check(stable_softmax, lambda: torch.randn(16, 100) * 10)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_layer_norm():
    w, b = torch.rand(48) + 0.5, torch.randn(48)
    check(layer_norm, lambda: torch.randn(8, 48), lambda: w, lambda: b)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_rms_norm():
    w = torch.rand(64) + 0.5
    check(rms_norm, lambda: torch.randn(4, 10, 64), lambda: w)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_horner_polynomial():
    check(horner, lambda: torch.linspace(-2, 2, 257))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_masked_mean():
    check(masked_mean, lambda: torch.randn(6, 20, 8), lambda: torch.rand(6, 20, 1) > 0.3)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_cosine_similarity():
    check(cosine_similarity, lambda: torch.randn(32, 16), lambda: torch.randn(32, 16))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_swish_clamp():
    check(swish_clamp, lambda: torch.randn(128) * 4)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_rotary_embedding():
    pos = torch.arange(12, dtype=torch.float32).unsqueeze(1) * torch.rand(8)
    check(rotary, lambda: torch.randn(2, 12, 16), lambda: pos.cos(), lambda: pos.sin())


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_smooth_l1():
    check(smooth_l1, lambda: torch.randn(40), lambda: torch.randn(40))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_onehot_cross_entropy():
    check(onehot_cross_entropy, lambda: torch.randn(10, 5), lambda: torch.randint(0, 5, (10,)))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_pairwise_distances():
    check(pairwise_sq_dist, lambda: torch.randn(9, 3), lambda: torch.randn(7, 3))
