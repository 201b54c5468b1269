from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Drop(nn.Module):
    def forward(self, x):
        yield pop("skip")  # expect: SKP305
        return x


model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Drop()), balance=[2, 1], chunks=4)
