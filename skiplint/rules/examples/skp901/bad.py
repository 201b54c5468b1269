from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Layer(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        yield stash(self.name, x)  # expect: SKP901
        return x
