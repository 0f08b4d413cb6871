"""The VAE example, shrunk: an encoder to (mu, logvar), the reparameterisation trick, a
decoder with a sigmoid, and binary cross-entropy plus the KL term as the loss. The noise
of the reparameterisation comes from numpy so both engines draw the same."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

RESULTS = {"losses": [], "grad_norms": {}}


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 12)
        self.fc21 = nn.Linear(12, 3)
        self.fc22 = nn.Linear(12, 3)
        self.fc3 = nn.Linear(3, 12)
        self.fc4 = nn.Linear(12, 16)
        self.noise = np.random.default_rng(7)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.from_numpy(self.noise.standard_normal(tuple(std.shape)).astype(np.float32))
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 16))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 16), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main():
    rng = np.random.default_rng(0)
    images = (rng.random((48, 4, 4)) > 0.6).astype(np.float32)
    loader = DataLoader(TensorDataset(torch.from_numpy(images)), batch_size=12)
    model = VAE()
    init = np.random.default_rng(1)
    for p in model.parameters():
        p.data = torch.from_numpy((0.3 * init.standard_normal(tuple(p.shape))).astype(np.float32))
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        model.train()
        for batch_idx, (data,) in enumerate(loader):
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            if epoch == 0 and batch_idx == 0:
                RESULTS["grad_norms"] = {n: p.grad.norm().item()
                                         for n, p in model.named_parameters()}
            optimizer.step()
            RESULTS["losses"].append(loss.item() / len(data))
    with torch.no_grad():
        sample = model.decode(torch.from_numpy(rng.standard_normal((4, 3)).astype(np.float32)))
        RESULTS["sample_mean"] = sample.mean().item()


if __name__ == "__main__":
    main()
