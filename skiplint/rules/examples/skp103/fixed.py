from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["1to2", "1to3"])
class Layer1(nn.Module):
    def forward(self, x):
        yield stash("1to2", x)
        yield stash("1to3", x)
        return x
