"""A layer whose input size is wrong: F.linear's shape check raises before any op runs."""
import dyngraph as torch
from dyngraph import nn

net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(12, 4))
out = net(torch.randn(4, 8))  # @raise
