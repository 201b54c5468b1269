from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["foo"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("foo", x)
        return x
