"""Scenario: global_variable

Cause: a module-level global (``AUGMENT_MODE``) read inside the compiled
function is reassigned by the training schedule.  Dynamo guards on the
global's value ``G['AUGMENT_MODE'] == 'none'`` (value).

What the user was doing: a curriculum that switches the data-augmentation
mode ("none" -> "flip" -> "flip+noise") by rebinding a global between stages.

Expected on torch 2.13: ``augment_and_encode`` compiles 3 times (one per
mode).  Failing guard: the value of global ``AUGMENT_MODE`` (value).
Same count on 2.4.1.
"""
import torch

AUGMENT_MODE = "none"


@torch.compile(backend="eager")
def augment_and_encode(images, weight):
    if AUGMENT_MODE in ("flip", "flip+noise"):
        images = torch.flip(images, dims=[-1])
    if AUGMENT_MODE == "flip+noise":
        images = images + 0.05 * torch.randn_like(images)
    return torch.relu(images.flatten(1) @ weight)


if __name__ == "__main__":
    torch.manual_seed(0)
    weight = torch.randn(3 * 8 * 8, 16)
    for stage, mode in enumerate(["none", "flip", "flip+noise"]):
        AUGMENT_MODE = mode
        for _step in range(3):
            feats = augment_and_encode(torch.randn(4, 3, 8, 8), weight)
        print(f"stage {stage} mode={mode} feats mean {feats.mean().item():.4f}")
