"""Scenario: tensor_requires_grad

Cause: the input tensor's ``requires_grad`` flag differs between calls.
Tensor guards include requires_grad, so the same shapes/dtypes still
recompile (tensor).

What the user was doing: a feature extractor called on plain data during
training, then on inputs with ``requires_grad=True`` to compute input
saliency maps (gradient w.r.t. the image).

Expected on torch 2.13: ``extract_features`` compiles 2 times.  Failing
guard: ``tensor 'images' requires_grad mismatch. expected requires_grad=0``
(tensor).  Same count on 2.4.1.
"""
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
head = nn.Linear(8, 10)


@torch.compile(backend="eager")
def extract_features(images):
    h = torch.relu(conv(images))
    return head(h.mean(dim=(2, 3)))


if __name__ == "__main__":
    torch.manual_seed(0)
    for _step in range(3):
        logits = extract_features(torch.randn(4, 3, 16, 16))
        logits.sum().backward()
    for i in range(2):
        images = torch.randn(4, 3, 16, 16, requires_grad=True)
        extract_features(images).max(dim=1).values.sum().backward()
        saliency = images.grad.abs().amax(dim=1)
        print(f"saliency map {i}: max {saliency.max().item():.4f}")
