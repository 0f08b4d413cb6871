"""Hard-routed mixture of experts: ordinary Python decides which sub-network runs.

A router scores four experts for each input; each input goes to its best-scoring expert
only, and an expert that receives no inputs this batch does not run at all (an ``if``
skips it). So the graph changes from iteration to iteration: which experts appear, and
how many rows each of them processes. The task is a piecewise function of a 2-D point,
a different curve in each quadrant, so the experts have something to specialise on.

    python demos/dynamic_routing.py --steps 300
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

N_EXPERTS = 4
BALANCE_WEIGHT = 0.05


def make_batch(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Points in [-1, 1]^2 and a target that follows a different rule in each quadrant."""
    points = rng.uniform(-1, 1, (size, 2))
    x0, x1 = points[:, 0], points[:, 1]
    quadrant = (x0 > 0) * 2 + (x1 > 0)
    rules = np.stack([np.sin(3 * x0), np.cos(3 * x1), 2 * x0 * x1, np.abs(x0) - x1])
    target = rules[quadrant, np.arange(size)]
    return points.astype(np.float32), target.astype(np.float32)[:, None]


class Expert(nn.Module):
    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.hidden = nn.Linear(2, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.out(F.relu(self.hidden(x)))


class MixtureOfExperts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.router = nn.Linear(2, N_EXPERTS)
        self.experts = nn.ModuleList([Expert() for _ in range(N_EXPERTS)])

    def forward(self, x):
        """Returns the outputs, the batch rows they belong to, and the router's gates."""
        gate = F.softmax(self.router(x), dim=1)
        choice = gate.argmax(dim=1).numpy()
        outputs, rows_in_order = [], []
        for k, expert in enumerate(self.experts):
            rows = np.flatnonzero(choice == k)
            if len(rows) == 0:  # nobody was routed here: this expert stays out of the graph
                continue
            index = torch.from_numpy(rows)
            # Scaling by the gate is what lets the router learn from a hard choice.
            outputs.append(expert(x[index]) * gate[index, k].unsqueeze(1))
            rows_in_order.append(rows)
        return torch.cat(outputs), np.concatenate(rows_in_order), gate


def main(steps: int = 300, seed: int = 0, batch_size: int = 32) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = MixtureOfExperts()
    optimizer = optim.Adam(model.parameters(), lr=0.03)
    losses = []
    every = max(1, steps // 10)
    for step in range(1, steps + 1):
        points, target = make_batch(batch_size, rng)
        prediction, rows, gate = model(torch.from_numpy(points))
        error = F.mse_loss(prediction, torch.from_numpy(target[rows]))
        # Switch-Transformer style load balancing, so the router does not starve experts.
        used = np.bincount(gate.detach().numpy().argmax(axis=1), minlength=N_EXPERTS)
        share = torch.from_numpy((used / batch_size).astype(np.float32))
        balance = N_EXPERTS * (share * gate.mean(dim=0)).sum()
        loss = error + BALANCE_WEIGHT * balance
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(error.item())
        if step % every == 0:
            print(f"step {step:4d}  loss {np.mean(losses[-every:]):.4f}  "
                  f"inputs per expert {used.tolist()}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
