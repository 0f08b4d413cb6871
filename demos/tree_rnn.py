"""Recursive Tree-RNN: predict the value of random arithmetic expressions.

Each iteration draws a new expression tree such as ``(7 - (2 + 5)) + 3`` and encodes it
bottom-up by plain recursion: a digit is an embedding lookup (module ``digit``), an
operator runs the ``combine.add`` or ``combine.sub`` layer on its two children. The graph
has the shape of the tree, so no two iterations need look alike.

    python demos/tree_rnn.py --steps 600
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

OPERATORS = {"add": "+", "sub": "-"}
SCALE = 20.0  # targets are divided by this so the output stays near [-1, 1]


def random_tree(rng: np.random.Generator, depth: int = 0):
    """A digit (leaf) or (operator, left, right); deeper trees get likelier to stop."""
    if depth > 0 and (depth >= 3 or rng.random() < 0.3):
        return int(rng.integers(0, 10))
    op = "add" if rng.random() < 0.5 else "sub"
    return (op, random_tree(rng, depth + 1), random_tree(rng, depth + 1))


def evaluate(tree) -> int:
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    return evaluate(left) + evaluate(right) if op == "add" else evaluate(left) - evaluate(right)


def show(tree) -> str:
    if isinstance(tree, int):
        return str(tree)
    op, left, right = tree
    return f"({show(left)} {OPERATORS[op]} {show(right)})"


class TreeRNN(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.digit = nn.Embedding(10, hidden)
        self.combine = nn.ModuleDict({op: nn.Linear(2 * hidden, hidden) for op in OPERATORS})
        self.readout = nn.Linear(hidden, 1)

    def encode(self, tree):
        if isinstance(tree, int):
            return self.digit(torch.tensor([tree]))
        op, left, right = tree
        children = torch.cat([self.encode(left), self.encode(right)], dim=1)
        return torch.tanh(self.combine[op](children))

    def forward(self, tree):
        return self.readout(self.encode(tree))[0, 0]


def main(steps: int = 600, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = TreeRNN()
    optimizer = optim.Adam(model.parameters(), lr=0.005)
    losses = []
    every = max(1, steps // 10)
    for step in range(1, steps + 1):
        tree = random_tree(rng)
        target = torch.tensor(evaluate(tree) / SCALE)

        prediction = model(tree)
        loss = F.mse_loss(prediction, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % every == 0:
            recent = np.mean(losses[-every:])
            print(f"step {step:4d}  loss {recent:.4f}  "
                  f"{show(tree)} = {evaluate(tree)}, predicted {SCALE * prediction.item():.1f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
