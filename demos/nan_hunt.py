"""A classifier that trains nicely and then turns into NaN: find out where, and why.

Two realistic bugs meet here. The learning-rate warm-up forgot its ceiling, so the rate
keeps growing by 15% a step; and the loss is a hand-written cross-entropy,
``-log(softmax(logits))``. For a while the loss falls. Then the steps get too big, the
logits blow up, softmax rounds a probability down to exactly 0, ``log`` returns -inf and
backward turns it into NaN. With the shipped seed it happens in iteration 60, every run.

Hunt it: ``dyngraph check demos/nan_hunt.py`` names the op and line; ``dyngraph debug``
with the NaN breakpoint stops right there. (``F.cross_entropy`` computes the log-softmax
in one stable step and would have stayed finite; ``min(MAX_LR, ...)`` fixes the warm-up.)

    python demos/nan_hunt.py --steps 80
"""

import argparse

import numpy as np

import dyngraph as torch
import dyngraph.nn as nn
import dyngraph.nn.functional as F
import dyngraph.optim as optim

BASE_LR, MAX_LR = 0.01, 0.5
WARMUP_GROWTH = 1.15  # warm-up: the learning rate grows by this factor every step, up to MAX_LR


def make_blobs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping clusters of 2-D points, standardised."""
    centers = np.array([[20.0, 20.0], [80.0, 30.0], [50.0, 80.0]])
    labels = np.repeat([0, 1, 2], 60)
    points = centers[labels] + rng.normal(0, 12, (len(labels), 2))
    return ((points - 50) / 30).astype(np.float32), labels.astype(np.int64)


class Classifier(nn.Module):
    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.hidden = nn.Linear(2, hidden)
        self.classifier = nn.Linear(hidden, 3)

    def forward(self, x):
        return self.classifier(F.relu(self.hidden(x)))


def main(steps: int = 80, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    points, labels = make_blobs(rng)
    x, y = torch.from_numpy(points), torch.from_numpy(labels)
    rows = torch.arange(len(labels))

    model = Classifier()
    optimizer = optim.SGD(model.parameters(), lr=BASE_LR)
    lr = BASE_LR
    losses = []
    for step in range(1, steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr
        lr = lr * WARMUP_GROWTH  # BUG: ...and never stops: should be min(MAX_LR, lr * ...)

        probs = F.softmax(model(x), dim=1)
        loss = -torch.log(probs[rows, y]).mean()  # BUG: log(softmax) underflows to log(0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        first_failure = not np.isfinite(losses[-1]) and all(np.isfinite(losses[:-1]))
        if step == 1 or step % 5 == 0 or first_failure:
            print(f"step {step:4d}  lr {optimizer.param_groups[0]['lr']:8.3f}  "
                  f"loss {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80, help="training steps (default 80)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.seed)
