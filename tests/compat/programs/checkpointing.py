"""Checkpointing as tutorials show it: train, torch.save the model and optimizer state
dicts with the epoch, build a fresh model, torch.load them and resume. The resumed
losses must continue exactly where the first run stopped."""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

RESULTS = {"losses": [], "grad_norms": {}}
RNG = np.random.default_rng(0)
X = torch.from_numpy(RNG.standard_normal((64, 5)).astype(np.float32))
Y = torch.from_numpy(np.sin(RNG.standard_normal((64, 1))).astype(np.float32))


def make_model():
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    rng = np.random.default_rng(1)
    with torch.no_grad():
        for p in model.parameters():
            values = 0.3 * rng.standard_normal(tuple(p.shape))
            p.copy_(torch.from_numpy(values.astype(np.float32)))
    return model


def run(model, optimizer, steps, start):
    criterion = nn.MSELoss()
    for step in range(start, start + steps):
        optimizer.zero_grad()
        loss = criterion(model(X), Y)
        loss.backward()
        if step == 0:
            RESULTS["grad_norms"] = {n: p.grad.norm().item() for n, p in model.named_parameters()}
        optimizer.step()
        RESULTS["losses"].append(loss.item())


def main():
    model = make_model()
    optimizer = optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    run(model, optimizer, 5, 0)
    path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    torch.save({"epoch": 5, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(),
                "loss": RESULTS["losses"][-1]}, path)

    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    model.train()
    run(model, optimizer, 5, checkpoint["epoch"])
    RESULTS["resumed_from"] = (checkpoint["epoch"], checkpoint["loss"])


if __name__ == "__main__":
    main()
