from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip", "extra"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        yield stash("extra", x * 2)
        return x
