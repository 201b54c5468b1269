from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"], pop=["skip"])  # expect: SKP105
class Relay(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        yield stash("skip", x + skip)
        return x
