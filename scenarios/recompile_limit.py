"""Scenario: recompile_limit

Cause: an int argument (the rollout ``horizon``) drives a Python ``for``
loop, so even after automatic dynamic kicks in the int must stay
specialized (the loop is unrolled).  Every new horizon is a recompile;
after the default limit of 8 compiles Dynamo gives up and runs the
function eagerly ("hit config.recompile_limit (8)", called
cache_size_limit on older torch).

What the user was doing: evaluating a learned dynamics model with a
horizon curriculum 1, 2, ..., 12.

Expected on torch 2.13: ``rollout`` compiles 8 times (horizons 1..8), then
the recompile-limit warning is printed once and horizons 9..12 run eagerly.
Failing guard: ``horizon == 1`` style value guards (other: recompile
limit).  torch 2.1.2 has cache_size_limit=64: 12 compiles, no limit hit.
"""
import torch
import torch.nn as nn

dynamics = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 8))


@torch.compile(backend="eager")
def rollout(state, horizon: int):
    states = []
    for _ in range(horizon):
        state = state + 0.1 * dynamics(state)
        states.append(state)
    return torch.stack(states, dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    with torch.no_grad():
        for horizon in range(1, 13):
            traj = rollout(torch.randn(4, 8), horizon)
            print(f"horizon {horizon}: traj {tuple(traj.shape)} final-norm {traj[:, -1].norm().item():.3f}")
