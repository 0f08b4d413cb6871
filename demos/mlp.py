"""MLP classifier on two interleaved spirals.

The baseline: full-batch training, so every iteration builds exactly the same graph
(one structure key for the whole run). Compare it with the dynamic demos.

    python demos/mlp.py --steps 200
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim


def make_spirals(n_per_class: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two spirals, one per class, with a little noise."""
    t = np.sqrt(rng.random(n_per_class)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    points = np.concatenate([arm, -arm]) + rng.normal(0, 0.03, (2 * n_per_class, 2))
    labels = np.repeat([0, 1], n_per_class)
    return points.astype(np.float32), labels.astype(np.int64)


class SpiralClassifier(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.hidden1 = nn.Linear(2, hidden)
        self.hidden2 = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, 2)

    def forward(self, x):
        h = torch.tanh(self.hidden1(x))
        h = torch.tanh(self.hidden2(h))
        return self.classifier(h)


def main(steps: int = 200, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    points, labels = make_spirals(100, rng)
    x, y = torch.from_numpy(points), torch.from_numpy(labels)

    model = SpiralClassifier()
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    losses = []
    every = max(1, steps // 10)
    for step in range(1, steps + 1):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % every == 0 or step == 1:
            # numpy, not tensor ops: an op after backward() would start the next iteration
            accuracy = (logits.detach().numpy().argmax(axis=1) == labels).mean()
            print(f"step {step:4d}  loss {losses[-1]:.4f}  accuracy {accuracy:.2f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
