"""Scenario: dict_keys

Cause: keys are added to a dict that the compiled function iterates.  Dynamo
guards on the dict's keys (length / key order), so every new key set is a
new specialization (container).

What the user was doing: a multi-task loss where auxiliary losses are added
to the ``losses`` dict after warm-up ("aux" from step 2, "reg" from step 4)
and ``weighted_total`` sums them with per-name weights.

Expected on torch 2.13: ``weighted_total`` compiles 3 times (keys {main},
{main, aux}, {main, aux, reg}).  Failing guard: the dict length / keys check
on ``L['losses']`` (container).  Same count on 2.4.1.
"""
import torch

LOSS_WEIGHTS = {"main": 1.0, "aux": 0.3, "reg": 0.01}


@torch.compile(backend="eager")
def weighted_total(losses):
    total = torch.zeros(())
    for name, value in losses.items():
        total = total + LOSS_WEIGHTS[name] * value
    return total


if __name__ == "__main__":
    torch.manual_seed(0)
    w = torch.randn(10, 1, requires_grad=True)
    for step in range(6):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        pred = x @ w
        losses = {"main": ((pred - y) ** 2).mean()}
        if step >= 2:
            losses["aux"] = pred.abs().mean()
        if step >= 4:
            losses["reg"] = (w ** 2).sum()
        total = weighted_total(losses)
        total.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad
            w.grad = None
        print(f"step {step} keys={sorted(losses)} total {total.item():.4f}")
