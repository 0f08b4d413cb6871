"""A NaN made inside a submodule (path "1"), and a parameter that turns NaN."""
import sys

import dyngraph as torch
from dyngraph import nn


class Head(nn.Module):
    def forward(self, x):
        return torch.log(x - 5.0)  # @log


if sys.argv[1:] == ["param"]:
    fc = nn.Linear(3, 2)
    for step in range(2):
        out = fc(torch.ones(1, 3))  # @use
        out.sum().backward()
        if step == 0:
            fc.weight.data[0, 0] = float("nan")
else:
    net = nn.Sequential(nn.Tanh(), Head())
    out = net(torch.ones(2, 2))
    out.sum().backward()
