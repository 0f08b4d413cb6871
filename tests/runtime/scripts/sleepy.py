"""Waits that are the script's own: a sleep between two ops."""
import sys
import time

import dyngraph as torch

x = torch.ones(2) * 2
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
print("done", (x * 3).sum().item())
