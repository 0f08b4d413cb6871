"""Runs ops until killed (to test quitting while a script runs)."""

import dyngraph as torch

x = torch.ones(4, requires_grad=True)
while True:
    y = (x * 2.0).sum()
    y.backward()
    x.grad = None
