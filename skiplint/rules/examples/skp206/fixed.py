from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x[:, :2])
        return x * 2


@skippable(pop=["skip"])
class Merge(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        skip = skip.detach()
        return x + skip.sum()


model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Merge()), balance=[3], chunks=4)
