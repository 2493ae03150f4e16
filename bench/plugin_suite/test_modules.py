"""Tiny nn.Modules, each class its own, compiled whole (14 tests)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _suite import budget


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ConvBNReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ResidualBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(24), nn.Linear(24, 24)

    def forward(self, x):
        return x + self.fc(F.gelu(self.norm(x)))


class AttentionHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(16, 8), nn.Linear(16, 8), nn.Linear(16, 8)

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / 8**0.5
        return torch.softmax(scores, dim=-1) @ self.v(x)


class SDPABlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(32, 96), nn.Linear(32, 32)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 4, 8).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, 32))


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(100, 12), nn.Linear(12, 3)

    def forward(self, tokens):
        return self.fc(self.emb(tokens).mean(dim=1))


class GatedLinearUnit(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(20, 40)

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        return a * torch.sigmoid(b)


class DepthwiseSeparable(nn.Module):
    def __init__(self):
        super().__init__()
        self.depth, self.point = nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.Conv2d(4, 6, 1)

    def forward(self, x):
        return self.point(F.relu(self.depth(x)))


class PositionalEncoding(nn.Module):
    def __init__(self):
        super().__init__()
        pos = torch.arange(10).unsqueeze(1)
        div = torch.exp(torch.arange(0, 16, 2) * (-9.21 / 16))
        pe = torch.zeros(10, 16)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


class Conv1dEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.pool, self.fc = nn.Conv1d(2, 6, 5), nn.AdaptiveAvgPool1d(1), nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(self.pool(F.relu(self.conv(x))).flatten(1))


class UnrolledRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.hid = nn.Linear(5, 12), nn.Linear(12, 12)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 12)
        for t in range(x.shape[1]):
            h = torch.tanh(self.inp(x[:, t]) + self.hid(h))
        return h


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(30, 8), nn.ReLU())
        self.dec = nn.Sequential(nn.Linear(8, 30), nn.Sigmoid())

    def forward(self, x):
        return self.dec(self.enc(x))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.pool, self.fc = nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), nn.Linear(4 * 3 * 3, 10)

    def forward(self, x):
        return self.fc(self.pool(F.relu(self.conv(x))).flatten(1))


class MixtureOfExperts(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(10, 3)
        self.experts = nn.ModuleList(nn.Linear(10, 10) for _ in range(3))

    def forward(self, x):
        weights = torch.softmax(self.gate(x), dim=-1)
        outs = torch.stack([e(x) for e in self.experts], dim=-1)
        return (outs * weights.unsqueeze(1)).sum(-1)


def check(model, make_input):
    torch.manual_seed(0)
    model.eval()
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad():
        for _ in range(3):
            x = make_input()
            torch.testing.assert_close(compiled(x), model(x))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_mlp():
    check(MLP(), lambda: torch.randn(8, 16))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_conv_bn_relu():
    check(ConvBNReLU(), lambda: torch.randn(2, 3, 12, 12))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_residual_block():
    check(ResidualBlock(), lambda: torch.randn(4, 7, 24))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_attention_head():
    check(AttentionHead(), lambda: torch.randn(2, 6, 16))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_sdpa_block():
    check(SDPABlock(), lambda: torch.randn(2, 5, 32))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_bag_of_words():
    check(BagOfWords(), lambda: torch.randint(0, 100, (4, 9)))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_gated_linear_unit():
    check(GatedLinearUnit(), lambda: torch.randn(3, 20))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_depthwise_separable_conv():
    check(DepthwiseSeparable(), lambda: torch.randn(1, 4, 10, 10))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_positional_encoding():
    check(PositionalEncoding(), lambda: torch.randn(2, 10, 16))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_conv1d_encoder():
    check(Conv1dEncoder(), lambda: torch.randn(3, 2, 20))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_unrolled_rnn():
    check(UnrolledRNN(), lambda: torch.randn(2, 4, 5))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_autoencoder():
    check(AutoEncoder(), lambda: torch.rand(5, 30))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_small_cnn():
    check(SmallCNN(), lambda: torch.randn(2, 1, 8, 8))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_mixture_of_experts():
    check(MixtureOfExperts(), lambda: torch.randn(6, 10))
