from torch import nn
from torchgpipe import GPipe

model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
pipe = GPipe(model, balance=[2, 1], chunks=4, checkpoint="always")  # expect: SKP503
