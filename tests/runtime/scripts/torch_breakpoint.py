"""A PyTorch module whose forward calls the built-in breakpoint()."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)

    def forward(self, x):
        h = self.fc(x).relu()
        breakpoint()  # @bp
        return h.sum()


torch.manual_seed(0)
net = Net()
loss = net(torch.randn(3, 4))  # @call
loss.backward()
