from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        yield x * 2  # expect: SKP108
