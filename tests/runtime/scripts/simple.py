"""Two iterations of a tiny model: a matmul, a relu, a sum, backward."""
import sys

import numpy as np

import dyngraph as torch

print("args:", sys.argv[1:])
w = torch.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 10, requires_grad=True)
for step in range(2):
    x = torch.tensor(np.ones((4, 2), dtype=np.float32))
    h = x @ w                      # line 12
    y = h.relu()                   # line 13
    loss = y.sum()                 # line 14
    loss.backward()                # line 15
    print("step", step, float(loss))
