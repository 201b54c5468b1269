from torch import nn
from torchgpipe.skip import pop, skippable, stash
