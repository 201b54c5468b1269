from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Layer(nn.Module)  # expect: SKP900
    def forward(self, x):
        yield stash("skip", x)
        return x
