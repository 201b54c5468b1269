from torch import nn
from fairscale.nn.pipe.skip import pop, skippable, stash


@skippable(pop=["skip", "extra"])
class Layer(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        extra = yield pop("extra")
        return x + skip + extra
