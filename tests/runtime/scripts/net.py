"""Modules: encoder.0 / encoder.1 blocks (fc + tanh) and a head, trained for 2 iterations."""
import dyngraph as torch
from dyngraph import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.encoder(x))  # @forward


torch.manual_seed(0)
net = Net()
for _step in range(2):
    out = net(torch.randn(3, 4))
    loss = (out * out).mean()  # @loss
    loss.backward()
