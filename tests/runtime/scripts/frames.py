"""A module whose forward has locals, a top-level loop, and the built-in breakpoint()."""
import sys

import dyngraph as torch
from dyngraph import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        h = self.fc(x)
        h = h.tanh()  # @tanh
        scale = 0.5
        return self.head(h) * scale


torch.manual_seed(0)
net = Net()
label = "frames"
for step in range(2):
    batch = torch.randn(3, 4)
    out = net(batch)  # @call
    loss = (out * out).mean()  # @loss
    if "--builtin" in sys.argv:
        breakpoint()  # @builtin
    loss.backward()
    print(f"step {step} loss {loss.item():.4f}")
