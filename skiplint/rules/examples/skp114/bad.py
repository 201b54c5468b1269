from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(pop=["skip"])
class Layer(nn.Module):
    def forward(self, x, mask):  # expect: SKP114
        skip = yield pop("skip")
        return x * mask + skip
