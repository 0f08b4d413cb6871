"""torch.compile meets a variable-length RNN: recompiles, a graph break, and the fix.

An RNN cell is unrolled over each batch's sequence length, under ``torch.compile``. A new
length is a new loop count, so Dynamo recompiles for it; and a data-dependent branch on
``loss.item()`` breaks the graph in two (the float it reads even becomes a guard of the
second half). ``--fixed`` is the same model written for the compiler: every batch padded
to one length with a mask over the steps past each sequence's end, and the branch taken
with ``torch.where`` inside the graph, compiled with ``fullgraph=True``: one compile, no
break, no recompile. Needs PyTorch (``pip install "dyngraph[torch]"``).

    python demos/torch_compile_varlen.py          # prints how often it compiled
    dyngraph debug demos/torch_compile_varlen.py  # which iteration recompiled, and why
    dyngraph record -o v.dgtrace demos/torch_compile_varlen.py && dyngraph summary v.dgtrace
    dyngraph record -o fixed.dgtrace demos/torch_compile_varlen.py -- --fixed
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sequence lengths of the batches, in order: three new lengths after the first, and
# lengths seen before (which reuse their compiled code).
LENGTHS = (5, 5, 7, 9, 5, 11, 7, 9)
MAX_LEN = max(LENGTHS)
BATCH, FEATURES, HIDDEN = 4, 3, 16


class VarLenRNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.RNNCell(FEATURES, HIDDEN)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x):  # x: (batch, length, features)
        h = torch.zeros(x.shape[0], HIDDEN)
        for t in range(x.shape[1]):  # one step per time step: the loop count is the length
            h = self.cell(x[:, t], h)
        return self.head(h).squeeze(1)

    def forward_padded(self, x, lengths):  # x: (batch, MAX_LEN, features), padded
        h = torch.zeros(x.shape[0], HIDDEN)
        for t in range(MAX_LEN):  # always MAX_LEN steps: one graph for every batch
            stepped = self.cell(x[:, t], h)
            h = torch.where((t < lengths).unsqueeze(1), stepped, h)  # past the end: keep h
        return self.head(h).squeeze(1)


def train_step(model, x, y):
    loss = F.mse_loss(model(x), y)
    if loss.item() > 1.0:  # a branch on a value: a graph break, and a guard on the float
        loss = loss * 0.5
    return loss


def train_step_fixed(model, x, lengths, y):
    loss = F.mse_loss(model.forward_padded(x, lengths), y)
    return torch.where(loss > 1.0, loss * 0.5, loss)  # the same branch, inside the graph


def batch(length: int, generator: torch.Generator):
    x = torch.randn(BATCH, length, FEATURES, generator=generator)
    y = x.sum(dim=(1, 2)) / length
    return x, y


def main(steps: int = len(LENGTHS), fixed: bool = False, backend: str = "eager") -> list[float]:
    # PyTorch remembers across runs which sizes turned out dynamic (a cache on disk): off,
    # so every run of the demo compiles the same way.
    torch._dynamo.config.automatic_dynamic_local_pgo = False
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    model = VarLenRNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    if fixed:
        step = torch.compile(train_step_fixed, backend=backend, fullgraph=True)
    else:
        step = torch.compile(train_step, backend=backend)
    losses = []
    for i in range(steps):
        length = LENGTHS[i % len(LENGTHS)]
        x, y = batch(length, generator)
        if fixed:
            padded = F.pad(x, (0, 0, 0, MAX_LEN - length))
            loss = step(model, padded, torch.full((BATCH,), length), y)
        else:
            loss = step(model, x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {i + 1}  length {length:2d}  loss {loss.item():.4f}")
    metrics = torch._dynamo.utils.get_compilation_metrics()
    recompiles = sum(1 for m in metrics if m.recompile_reason)
    print(f"compiled {len(metrics)} time(s), {recompiles} of them recompiles "
          f"({'fixed' if fixed else 'as written'})")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=len(LENGTHS))
    parser.add_argument("--fixed", action="store_true",
                        help="pad to one length and branch with torch.where: compiles once")
    parser.add_argument("--backend", default="eager",
                        help="torch.compile backend: eager, aot_eager or inductor (slow to "
                             "compile on a CPU) (default: eager)")
    args = parser.parse_args()
    main(args.steps, fixed=args.fixed, backend=args.backend)
