"""A multi-task model: one trunk, a head per task in an nn.ModuleDict, the task chosen by name per call.

The task name picks the head: torch 2.13 compiles `forward` once per task name (3 compiles), and the
later calls with a known name reuse their entry. Inherent: guarddiag's hint is a note (a string that
picks a code path), with no line to write.
"""
import _truth
import torch
import torch.nn as nn

torch.manual_seed(0)


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.heads = nn.ModuleDict({"sentiment": nn.Linear(64, 3), "topic": nn.Linear(64, 10), "lang": nn.Linear(64, 5)})

    def forward(self, x, task):
        return self.heads[task](self.trunk(x))


model = torch.compile(MultiTask())
x = torch.randn(8, 32)
for task in ["sentiment", "topic", "lang", "topic", "sentiment"]:
    print(task, tuple(model(x, task).shape))
_truth.write()
