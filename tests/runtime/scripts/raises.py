"""The second module's matmul gets incompatible shapes and raises."""
import dyngraph as torch
from dyngraph import nn


class Bad(nn.Module):
    def forward(self, h):
        return h @ torch.ones(5, 7)  # @raise


net = nn.Sequential(nn.Linear(3, 2), Bad())
for _step in range(2):
    x = torch.ones(4, 3)
    out = net(x)
