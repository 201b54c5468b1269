from torch import nn
from fairscale.nn.pipe.skip import pop, skippable, stash


@skippable(pop=["skip"])
class Layer(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip
