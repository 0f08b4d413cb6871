"""Message-passing graph neural network over random molecule-like graphs.

Every iteration draws a few small "molecules" (4 to 10 atoms of three elements, a random
tree of bonds plus the odd ring-closing bond) and predicts, for each, how many bonds join
two different elements. The property needs each atom to hear from its neighbours, which
is what the message-passing layers do. Each molecule has its own atom count, so the
shapes in the graph (and its structure key) change every iteration.

    python demos/gnn.py --steps 300
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

ELEMENTS = 3
SCALE = 5.0  # targets are divided by this so the output stays near 1


def random_molecule(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """One-hot atoms (n, ELEMENTS), a symmetric 0/1 adjacency (n, n), and the target."""
    n = int(rng.integers(4, 11))
    element = rng.integers(0, ELEMENTS, n)
    adjacency = np.zeros((n, n), np.float32)
    for atom in range(1, n):  # a random tree keeps the molecule in one piece
        other = int(rng.integers(0, atom))
        adjacency[atom, other] = adjacency[other, atom] = 1
    for _ in range(int(rng.integers(0, 2))):  # sometimes close a ring
        a, b = rng.choice(n, 2, replace=False)
        adjacency[a, b] = adjacency[b, a] = 1
    mixed_bonds = (adjacency * (element[:, None] != element[None, :])).sum() / 2
    atoms = np.eye(ELEMENTS, dtype=np.float32)[element]
    return atoms, adjacency, float(mixed_bonds)


class MessagePassing(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.message = nn.Linear(dim, dim)
        self.update = nn.Linear(2 * dim, dim)

    def forward(self, h, adjacency):
        incoming = adjacency @ self.message(h)  # each atom sums its neighbours' messages
        return F.relu(self.update(torch.cat([h, incoming], dim=1)))


class MoleculeNet(nn.Module):
    def __init__(self, dim: int = 16, rounds: int = 2) -> None:
        super().__init__()
        self.embed = nn.Linear(ELEMENTS, dim)
        self.layers = nn.ModuleList([MessagePassing(dim) for _ in range(rounds)])
        self.readout = nn.Linear(dim, 1)

    def forward(self, atoms, adjacency):
        h = self.embed(atoms)
        for layer in self.layers:
            h = layer(h, adjacency)
        return self.readout(h.sum(dim=0))  # sum over atoms: one number per molecule


def main(steps: int = 300, seed: int = 0, molecules_per_step: int = 4) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = MoleculeNet()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    losses = []
    every = max(1, steps // 10)
    for step in range(1, steps + 1):
        batch = [random_molecule(rng) for _ in range(molecules_per_step)]
        predictions = torch.cat(
            [model(torch.from_numpy(atoms), torch.from_numpy(adjacency))
             for atoms, adjacency, _ in batch]
        )
        target = torch.tensor([bonds / SCALE for _, _, bonds in batch])
        loss = F.mse_loss(predictions, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % every == 0:
            sizes = [len(atoms) for atoms, _, _ in batch]
            print(f"step {step:4d}  loss {np.mean(losses[-every:]):.4f}  atoms {sizes}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
