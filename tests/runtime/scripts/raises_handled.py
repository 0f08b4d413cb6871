"""An exception raised and handled inside a module, then a fatal one at top level."""
import dyngraph as torch
from dyngraph import nn


class Careful(nn.Module):
    def forward(self, x):
        try:
            return x @ torch.ones(9, 9)  # raises, and is handled here
        except RuntimeError:
            return x * 2


net = nn.Sequential(nn.Linear(2, 2), Careful())
out = net(torch.ones(1, 2))
raise KeyError("fatal")  # @raise
