from torch import nn
from torch.distributed.pipeline.sync.skip import pop, skippable, stash  # expect: SKP401
