from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["mask"])
class NoMask(nn.Module):
    def forward(self, x):
        yield stash("mask", x.new_ones(()))  # a tensor that masks nothing
        return x


@skippable(pop=["mask"])
class ApplyMask(nn.Module):
    def forward(self, x):
        mask = yield pop("mask")
        return x * mask


pipe = GPipe(nn.Sequential(NoMask(), nn.Linear(8, 8), ApplyMask()), balance=[1, 2], chunks=4)
