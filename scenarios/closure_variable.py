"""Scenario: closure_variable

Cause: the compiled function reads a closure cell whose value differs.  A
factory ``make_loss(reduction)`` returns a new inner function per call; all
of them share one code object, so Dynamo keeps one cache for ``hinge_loss``
and guards on the captured cell value (value).

What the user was doing: building one loss function per evaluation metric
("mean", "sum", "none") from a factory and compiling each one.

Expected on torch 2.13: ``hinge_loss`` compiles 3 times (one per captured
``reduction``).  Failing guard: the closure cell value, shown as something
like ``L['reduction'] == 'mean'`` (value).  Same count on 2.4.1.
"""
import torch


def make_loss(reduction: str, margin: int = 1):
    @torch.compile(backend="eager")
    def hinge_loss(scores, labels):
        losses = torch.clamp(margin - labels * scores, min=0)
        if reduction == "mean":
            return losses.mean()
        if reduction == "sum":
            return losses.sum()
        return losses

    return hinge_loss


if __name__ == "__main__":
    torch.manual_seed(0)
    losses = {name: make_loss(name) for name in ["mean", "sum", "none"]}
    for step in range(3):
        scores = torch.randn(32)
        labels = torch.randint(0, 2, (32,)).float() * 2 - 1
        for name, fn in losses.items():
            value = fn(scores, labels)
            print(f"step {step} {name}: {value.sum().item():.3f}")
