from torch import nn
from torchgpipe.skip import pop, skippable, stash


STASHERS = {}
for name in ("enc0", "enc1"):
    @skippable(stash=[name])
    class Stasher(nn.Module):
        skip_name = name  # read when the class is made

        def forward(self, x):
            yield stash(self.skip_name, x)
            return x

    STASHERS[name] = Stasher
