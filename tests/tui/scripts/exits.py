"""One iteration, then sys.exit(3)."""

import sys

import dyngraph as torch

w = torch.ones(3, requires_grad=True)
(w * 2.0).sum().backward()
print("bye")
sys.exit(3)
