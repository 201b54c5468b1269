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


ns = Namespace()
layers = nn.Sequential(Stash(), Stash().isolate(ns), Pop().isolate(ns), Pop())
model = GPipe(layers, balance=[2, 2], chunks=4)  # expect: SKP306
