from torch import nn
from fairscale.nn.pipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Layer(nn.Module):
    def forward(self, x):
        stash("skip", x)  # expect: SKP107
        return x
