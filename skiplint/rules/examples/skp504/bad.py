from torch import nn
from torchgpipe import GPipe

model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.Linear(8, 8))  # expect: SKP504
pipe = GPipe(model, balance=[2, 1], chunks=4)
