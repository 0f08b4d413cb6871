"""A classic MNIST-style training script: a Dataset, a DataLoader with a custom sampler,
a small conv net, SGD with momentum, a StepLR schedule and a test pass under no_grad.

Written against PyTorch; dyngraph runs it with only the imports changed. The images are
synthetic 8x8 "digits" from numpy, and the weights are set from numpy, so both engines
start from the same numbers.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset, Sampler

RESULTS = {"losses": [], "grad_norms": {}}


class Digits(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 4, n)
        prototypes = rng.standard_normal((4, 1, 8, 8)).astype(np.float32)
        noise = 0.5 * rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
        self.images = prototypes[self.labels] + noise

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return torch.from_numpy(self.images[index]), int(self.labels[index])


class NumpyShuffle(Sampler):
    """Shuffles with numpy, so the batches do not depend on the engine's generator."""

    def __init__(self, data, seed):
        self.n = len(data)
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        return iter(self.rng.permutation(self.n).tolist())

    def __len__(self):
        return self.n


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        bound = 1.0 / np.sqrt(p[0].numel()) if p.dim() > 1 else 0.1
        values = rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)
        p.data.copy_(torch.from_numpy(values))


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        if epoch == 1 and batch_idx == 0:
            RESULTS["grad_norms"] = {n: p.grad.norm().item() for n, p in model.named_parameters()}
        optimizer.step()
        RESULTS["losses"].append(loss.item())


def test(model, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    RESULTS.setdefault("test", []).append((test_loss / len(loader.dataset), correct))


def main():
    train_data, test_data = Digits(96, 0), Digits(32, 1)
    train_loader = DataLoader(train_data, batch_size=16, sampler=NumpyShuffle(train_data, 2))
    test_loader = DataLoader(test_data, batch_size=32)
    model = Net()
    numpy_init(model, 3)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, 3):
        train(model, train_loader, optimizer, epoch)
        test(model, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
