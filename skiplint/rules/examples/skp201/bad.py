from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import Namespace, pop, skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Pop(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


model = GPipe(nn.Sequential(Pop(), nn.ReLU(), Stash()), balance=[2, 1], chunks=4)  # expect: SKP201
