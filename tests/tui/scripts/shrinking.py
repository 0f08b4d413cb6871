"""A recurrent cell run over a long sequence, then a short one: the second iteration
loses most of the first one's nodes (a diff to roll up). Its inputs are prepared before
any differentiable op: iteration 0, setup."""

import dyngraph as torch
import dyngraph.nn as nn

torch.manual_seed(0)
cell = nn.RNNCell(4, 8)
data = torch.randn(40, 2, 4) * 0.5  # setup: an op before any that requires gradients
for steps in (30, 5):
    h = torch.zeros(2, 8)
    for k in range(steps):
        h = cell(data[k], h)
    h.pow(2).mean().backward()
print("done")
