"""Two iterations, then a shape error in the third (post-mortem in the debugger)."""

import dyngraph as torch

w = torch.ones(3, 2, requires_grad=True)
for step in range(3):
    x = torch.ones(4, 3 if step < 2 else 5)
    loss = (x @ w).sum()
    loss.backward()
    print("step", step)
