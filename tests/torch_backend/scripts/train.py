"""A plain PyTorch training loop; --nan-at N makes the forward produce NaN at step N,
--bad-backward N a NaN gradient from a finite forward at step N, --pause calls
dyngraph.breakpoint() (when dyngraph is importable) before the second step."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--nan-at", type=int, default=0)
parser.add_argument("--bad-backward", type=int, default=0)
parser.add_argument("--pause", action="store_true")
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))  # @hidden
        return self.fc2(h)


torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
for step in range(1, args.steps + 1):
    if args.pause and step == 2:
        import dyngraph

        dyngraph.breakpoint("before step 2")
    out = net(x)
    if step == args.nan_at:
        out = out * torch.log(out - out - 1.0)  # @nan-forward
    if step == args.bad_backward:
        out = out + torch.sqrt(out - out).sum()  # @nan-backward
    loss = F.cross_entropy(out, y)  # @loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
