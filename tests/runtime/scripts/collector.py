"""A collector that runs all the time (threshold 1, cyclic garbage every step): a Ctrl-C
sent while this runs lands during a collection most of the time."""
import gc

import dyngraph as torch

gc.set_threshold(1)
print("started", flush=True)
x = torch.ones(4, requires_grad=True)
for step in range(20_000):
    junk = []
    junk.append(junk)
    y = (x * 1.0001).sum()
    if step % 50 == 49:
        y.backward()
print("finished")
