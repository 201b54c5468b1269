from torch import nn
from torchgpipe import GPipe

# Each micro-batch updates the running statistics, as in the pipelining port.
model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 8))
pipe = GPipe(model, balance=[2, 1], chunks=4)
