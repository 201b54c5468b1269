from torch import nn
from fairscale.nn.pipe.skip import pop, skippable, stash


@skippable()
class Layer(nn.Module):
    def forward(self, x):
        return x
