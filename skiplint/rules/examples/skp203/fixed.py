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


ns1, ns2 = Namespace(), Namespace()
model = GPipe(
    nn.Sequential(
        Stash().isolate(ns1), Pop().isolate(ns1),
        Stash().isolate(ns2), Pop().isolate(ns2),
    ),
    balance=[2, 2], chunks=4,
)
