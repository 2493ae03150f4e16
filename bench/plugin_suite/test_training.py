"""Compiled forward + loss inside a few optimizer steps; backward and step stay eager (8 tests)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _suite import budget


def train(model, loss_fn, make_batch, opt_cls=torch.optim.SGD, steps=4, **opt_kwargs):
    torch.manual_seed(0)
    opt = opt_cls(model.parameters(), **{"lr": 0.01, **opt_kwargs})
    compiled = torch.compile(loss_fn, backend="eager")
    losses = []
    for _ in range(steps):
        batch = make_batch()
        loss = compiled(model, *batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_regression_sgd():
    def loss_fn(model, x, y):
        return F.mse_loss(model(x), y)

    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    train(model, loss_fn, lambda: (torch.randn(32, 6), torch.randn(32, 1)))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_classifier_adam():
    def loss_fn(model, x, labels):
        return F.cross_entropy(model(x), labels)

    model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 4))
    train(model, loss_fn, lambda: (torch.randn(16, 10), torch.randint(0, 4, (16,))), torch.optim.Adam)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_autoencoder_reconstruction():
    def loss_fn(model, x):
        return F.binary_cross_entropy(model(x), x)

    model = nn.Sequential(nn.Linear(12, 4), nn.ReLU(), nn.Linear(4, 12), nn.Sigmoid())
    train(model, loss_fn, lambda: (torch.rand(8, 12),))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_logistic_regression():
    def loss_fn(model, x, y):
        return F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)

    model = nn.Linear(5, 1)
    train(model, loss_fn, lambda: (torch.randn(64, 5), (torch.rand(64) > 0.5).float()), lr=0.1)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_contrastive_embeddings():
    def loss_fn(model, a, b):
        za, zb = F.normalize(model(a), dim=-1), F.normalize(model(b), dim=-1)
        logits = za @ zb.T / 0.1
        return F.cross_entropy(logits, torch.arange(a.shape[0]))

    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
    train(model, loss_fn, lambda: (torch.randn(10, 8), torch.randn(10, 8)))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_label_smoothing():
    def loss_fn(model, x, labels):
        return F.cross_entropy(model(x), labels, label_smoothing=0.1)

    model = nn.Sequential(nn.Linear(7, 7), nn.LayerNorm(7), nn.Linear(7, 3))
    train(model, loss_fn, lambda: (torch.randn(12, 7), torch.randint(0, 3, (12,))))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_weight_decay_adamw():
    def loss_fn(model, x, y):
        return F.huber_loss(model(x), y)

    model = nn.Sequential(nn.Linear(4, 8), nn.SiLU(), nn.Linear(8, 2))
    train(model, loss_fn, lambda: (torch.randn(20, 4), torch.randn(20, 2)), torch.optim.AdamW, weight_decay=0.01)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_sequence_tagger():
    def loss_fn(model, tokens, tags):
        emb, head = model
        return F.cross_entropy(head(emb(tokens)).flatten(0, 1), tags.flatten())

    model = nn.ModuleList([nn.Embedding(50, 8), nn.Linear(8, 5)])
    train(model, loss_fn, lambda: (torch.randint(0, 50, (4, 6)), torch.randint(0, 5, (4, 6))))
