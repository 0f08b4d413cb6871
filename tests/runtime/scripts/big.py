"""A 1,000,000-element tensor, then a pause to fetch it."""
import numpy as np

import dyngraph
import dyngraph as torch

x = torch.tensor(np.arange(1_000_000, dtype=np.float32).reshape(1000, 1000))
y = x * 0.5  # @big
dyngraph.breakpoint()
