from torch import nn
from fairscale.nn import Pipe
from fairscale.nn.pipe.skip import Namespace, pop, skippable, stash


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


model = Pipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
