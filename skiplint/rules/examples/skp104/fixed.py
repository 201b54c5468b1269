from torch import nn
from fairscale.nn.pipe.skip import pop, skippable, stash


@skippable(pop=["1to3", "2to3"])
class Layer3(nn.Module):
    def forward(self, x):
        skip_1to3 = yield pop("1to3")
        skip_2to3 = yield pop("2to3")
        return x + skip_1to3 + skip_2to3
