"""Minibatches sliced from one tensor, a small module tree, and an L2 term from epoch 3.

Every minibatch has the same structure (only the slice offsets differ); epoch 3 adds the
L2 term: one real change in 12 iterations. Prints the loss of each epoch.
"""

import dyngraph as torch
import dyngraph.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 8)
Y = torch.randn(64, 1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        h = self.encoder(x)
        return self.head(h)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(1, 4):
    for i in range(0, 64, 16):
        x, y = X[i:i + 16], Y[i:i + 16]
        loss = ((model(x) - y) ** 2).mean()
        if epoch >= 3:
            loss = loss + 1e-4 * sum((p ** 2).sum() for p in model.parameters())
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
