import torch
from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Encode(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        x = self.lin(x)
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Pop(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


layers = nn.Sequential(Encode(), nn.ReLU(), Pop())
model = GPipe(layers, balance=[2, 1], chunks=4)
