"""A multi-task model: one trunk, a head per task in an nn.ModuleDict, the task chosen by name per call."""
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
