"""A C call that keeps the GIL: a regular expression that backtracks for ages."""
import re

import dyngraph as torch

print("started", torch.ones(2).sum().item(), flush=True)
re.match(r"(a|aa)+$", "a" * 80 + "b")  # @held
print("never here")
