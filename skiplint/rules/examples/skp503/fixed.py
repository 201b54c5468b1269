from torch import nn
from torch.utils.checkpoint import checkpoint
from torchgpipe import GPipe


class Recomputed(nn.Module):
    """Recomputes its layer in backward, under GPipe and in a pipelining stage alike."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return checkpoint(self.layer, x, use_reentrant=False)


model = nn.Sequential(Recomputed(nn.Linear(8, 8)), nn.ReLU(), nn.Linear(8, 8))
pipe = GPipe(model, balance=[2, 1], chunks=4, checkpoint="never")
