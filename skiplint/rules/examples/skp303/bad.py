import torch
from torch import nn
from torchgpipe import GPipe
from torchgpipe.balance import balance_by_time
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
balance = balance_by_time(2, layers, torch.empty(64, 16), device=torch.device("cpu"))  # expect: SKP303
model = GPipe(layers, balance=balance, chunks=4)
