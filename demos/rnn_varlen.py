"""GRU over digit sequences of varying length: learn to add them up.

One sequence per iteration, one Python loop step per token, no padding: a sequence of
3 digits builds a graph with 3 cell steps, one of 9 digits a graph with 9. Step through
two iterations in the debugger and watch the graph grow to a different length.

    python demos/rnn_varlen.py --steps 400
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

MIN_LEN, MAX_LEN = 2, 8


class DigitSummer(nn.Module):
    def __init__(self, embed: int = 8, hidden: int = 24) -> None:
        super().__init__()
        self.hidden_size = hidden
        self.embed = nn.Embedding(10, embed)
        self.cell = nn.GRUCell(embed, hidden)
        self.readout = nn.Linear(hidden, 1)

    def forward(self, digits):
        vectors = self.embed(digits)  # (length, embed)
        h = torch.zeros(1, self.hidden_size)
        for t in range(digits.shape[0]):  # as many steps as this sequence has digits
            h = self.cell(vectors[t : t + 1], h)
        return self.readout(h)[0, 0]


def main(steps: int = 400, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = DigitSummer()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    losses = []
    every = max(1, steps // 10)
    for step in range(1, steps + 1):
        length = int(rng.integers(MIN_LEN, MAX_LEN + 1))
        digits = rng.integers(0, 10, size=length)
        target = torch.tensor(float(digits.sum()) / 10.0)  # scaled so the output stays near 1

        prediction = model(torch.from_numpy(digits))
        loss = F.mse_loss(prediction, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % every == 0:
            recent = np.mean(losses[-every:])
            print(f"step {step:4d}  length {length}  loss {recent:.4f}  "
                  f"(sum {digits.sum()}, predicted {10 * prediction.item():.1f})")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="training steps (default 400)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
