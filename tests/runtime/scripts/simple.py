"""Two iterations of a tiny model: matmul, relu, sum, backward. Markers name the lines."""
import sys

import numpy as np

import dyngraph as torch

print("args:", sys.argv[1:])
w = torch.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 10, requires_grad=True)
for step in range(2):
    x = torch.tensor(np.ones((4, 2), dtype=np.float32))
    h = x @ w  # @matmul
    y = h.relu()  # @relu
    loss = y.sum()  # @sum
    loss.backward()  # @backward
    print("step", step, float(loss))
