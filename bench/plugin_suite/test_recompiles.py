"""Tests whose code recompiles once or twice, each budget exactly what it recompiles (8 tests)."""
import pytest
import torch
import torch.nn as nn
from _suite import budget


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_new_batch_size_static():
    def head(x, w):
        return torch.relu(x @ w).sum(-1)

    compiled = torch.compile(head, backend="eager", dynamic=False)
    w = torch.randn(8, 4)
    for batch in (8, 8, 16, 16):
        compiled(torch.randn(batch, 8), w)


@pytest.mark.recompile_budget(max_recompiles=budget(2))
def test_three_sequence_lengths_static():
    def pool(x):
        return x.softmax(dim=1).mean(dim=1)

    compiled = torch.compile(pool, backend="eager", dynamic=False)
    for length in (5, 7, 9, 5):
        compiled(torch.randn(2, length, 3))


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_batch_size_automatic_dynamic():
    def normalize(x):
        return (x - x.mean(0)) / (x.std(0) + 1e-5)

    compiled = torch.compile(normalize, backend="eager")
    for batch in (8, 16, 24, 32):
        compiled(torch.randn(batch, 6))


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.repeats = 2

    def forward(self, x):
        for _ in range(self.repeats):
            x = torch.tanh(self.fc(x))
        return x


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_int_attribute_changes():
    model = Scaled()
    compiled = torch.compile(model, backend="eager")
    compiled(torch.randn(2, 4))
    model.repeats = 3
    compiled(torch.randn(2, 4))


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_dtype_changes():
    def affine(x):
        return x * 2.5 - 1

    compiled = torch.compile(affine, backend="eager")
    compiled(torch.randn(10))
    compiled(torch.randn(10, dtype=torch.float64))
    compiled(torch.randn(10, dtype=torch.float64))


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_grad_mode_changes():
    def step(x, w):
        return (x @ w).pow(2).mean()

    compiled = torch.compile(step, backend="eager")
    w = torch.randn(3, 3, requires_grad=True)
    compiled(torch.randn(4, 3), w).backward()
    with torch.no_grad():
        compiled(torch.randn(4, 3), w)


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_python_int_argument():
    def repeat_add(x, n):
        return x + n

    compiled = torch.compile(repeat_add, backend="eager")
    for n in (1, 2, 3, 4):
        compiled(torch.ones(3), n)


class DropoutHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop, self.fc = nn.Dropout(0.2), nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(self.drop(x))


@pytest.mark.recompile_budget(max_recompiles=budget(1))
def test_train_then_eval():
    model = DropoutHead()
    compiled = torch.compile(model, backend="eager")
    compiled(torch.randn(3, 6))
    model.eval()
    compiled(torch.randn(3, 6))
    compiled(torch.randn(3, 6))
