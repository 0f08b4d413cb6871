"""A tiny training loop for the debugger's tests: 3 iterations of a 2-layer tanh net.

With --nan-at K, iteration K takes the log of a negative number (a NaN appears there).
"""

import sys

import numpy as np

import dyngraph as torch

nan_at = int(sys.argv[sys.argv.index("--nan-at") + 1]) if "--nan-at" in sys.argv else 0
steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 3
rng = np.random.default_rng(0)
w1 = torch.tensor(rng.normal(0, 0.5, (4, 8)).astype(np.float32), requires_grad=True)
w2 = torch.tensor(rng.normal(0, 0.5, (8, 1)).astype(np.float32), requires_grad=True)
x = torch.tensor(rng.normal(0, 1, (16, 4)).astype(np.float32))
y = torch.tensor(rng.normal(0, 1, (16, 1)).astype(np.float32))

for step in range(1, steps + 1):
    h = (x @ w1).tanh()
    out = h @ w2
    if step == nan_at:
        out = (out - 100.0).log()
    loss = ((out - y) * (out - y)).mean()
    loss.backward()
    w1.data.sub_(w1.grad, alpha=0.1)  # in place, not recorded: as an optimizer does
    w2.data.sub_(w2.grad, alpha=0.1)
    w1.grad = None
    w2.grad = None
    print(f"step {step} loss {loss.item():.4f}")
