from torch import nn
from fairscale.nn.pipe.skip import pop, skippable, stash


@skippable(pop=["1to3", "2to3"])  # expect: SKP104
class Layer3(nn.Module):
    def forward(self, x):
        skip_1to3 = yield pop("1to3")
        return x + skip_1to3
