"""A forked worker runs ops and prints; only the main process is traced."""
import os

import dyngraph as torch

x = torch.ones(3, requires_grad=True)
pid = os.fork()
if pid == 0:
    y = (x * 5).sum()
    print("worker", y.item(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
z = (x * 2).sum()
print("main", z.item())
