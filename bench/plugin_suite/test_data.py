"""Data-pipeline ops compiled as preprocessing (8 tests)."""
import pytest
import torch
from _suite import budget


def check(fn, *args):
    compiled = torch.compile(fn, backend="eager")
    for _ in range(2):
        torch.testing.assert_close(compiled(*args), fn(*args))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_normalize_images():
    def normalize(img, mean, std):
        return (img / 255.0 - mean[:, None, None]) / std[:, None, None]

    check(normalize, torch.randint(0, 256, (3, 16, 16)).float(), torch.tensor([0.48, 0.45, 0.40]), torch.tensor([0.23, 0.22, 0.22]))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_center_crop_and_flip():
    def crop_flip(img):
        h, w = img.shape[-2:]
        top, left = (h - 8) // 2, (w - 8) // 2
        return img[..., top : top + 8, left : left + 8].flip(-1)

    check(crop_flip, torch.randn(3, 12, 14))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_fake_quantize():
    def quantize(x, scale):
        return torch.clamp(torch.round(x / scale), -128, 127) * scale

    check(quantize, torch.randn(256), torch.tensor(0.05))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_running_mean():
    def running_mean(x):
        return x.cumsum(dim=-1) / torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)

    check(running_mean, torch.randn(4, 50))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_topk_select():
    def top_scores(scores, k=5):
        values, idx = scores.topk(k, dim=-1)
        return values.softmax(-1), idx

    check(top_scores, torch.randn(6, 40))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_clip_by_norm():
    def clip(g, max_norm=1.0):
        norm = g.norm()
        return torch.where(norm > max_norm, g * (max_norm / norm), g)

    check(clip, torch.randn(100) * 3)


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_bucketize_histogram():
    def histogram(x, edges):
        return torch.bincount(torch.bucketize(x, edges), minlength=edges.numel() + 1)

    check(histogram, torch.randn(500), torch.linspace(-2, 2, 9))


@pytest.mark.recompile_budget(max_recompiles=budget(0))
def test_sorted_median():
    def median_of_rows(x):
        return x.sort(dim=-1).values[:, x.shape[-1] // 2]

    check(median_of_rows, torch.randn(7, 31))
