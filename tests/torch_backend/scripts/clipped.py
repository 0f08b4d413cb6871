"""A healthy training loop that clips its gradients at 1.0 (issue 22's check case).

``--scale S`` multiplies the loss by S (its gradients grow S times: with 20 they exceed
0.5); ``--engine dyngraph`` runs the same loop on dyngraph's numpy engine instead of
PyTorch (the compatibility promise: ``import dyngraph as torch``)."""
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--scale", type=float, default=1.0)
parser.add_argument("--engine", choices=("torch", "dyngraph"), default="torch")
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()

if args.engine == "torch":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
else:
    import dyngraph as torch
    import dyngraph.nn as nn
    import dyngraph.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(64, 6), torch.randint(0, 3, (64,))
for step in range(args.steps):
    loss = F.cross_entropy(net(x), y)
    if args.scale != 1.0:
        loss = loss * args.scale
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
