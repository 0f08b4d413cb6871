"""What observing torch.compile costs: the step time of a compiled model, plain and under
``dyngraph.trace`` (``--compile observe``, the default), in one run.

    python bench/compile_lane.py            # 15 interleaved rounds
    python bench/compile_lane.py --quick    # 5

Two compiled steps (``backend="aot_eager"``), each called in a loop once compiled: a tiny
one (a 16-wide Linear and a ReLU, batch 4: the fixed cost of a compiled call dominates, so
the lane's per-call work shows at its largest) and an MLP 784-256-128-10 training step
(batch 64, the loss and ``backward()`` outside the compiled call, as usual). Under the
recording, every compiled call steps the capture aside and back (the mode off the stack,
global hooks and patches undone and redone, the stance swapped); ops outside it (the loss)
are captured as usual. Ratios of wall-clock medians over interleaved rounds, with BLAS and
PyTorch on one thread; the best round's ratio beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import dyngraph  # noqa: E402

torch.set_num_threads(1)


def tiny() -> tuple[int, object]:
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
    x = torch.randn(4, 16)
    step = torch.compile(model, backend="aot_eager")

    def run() -> None:
        step(x)

    return 2000, (step, run)


def mlp() -> tuple[int, object]:
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    forward = torch.compile(model, backend="aot_eager")

    def run() -> None:
        loss = F.cross_entropy(forward(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return 50, (forward, run)


def timed(run, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - t0) / calls


def measure(name: str, make, rounds: int) -> None:
    torch._dynamo.reset()
    calls, (_, plain_run) = make()  # compiled outside any recording: plain torch.compile
    plain_run()
    with dyngraph.trace(stats="none"):
        _, (_, observed_run) = make()  # compiled inside one: observed in every recording
        observed_run()
    plain: list[float] = []
    observed: list[float] = []
    for _ in range(rounds):  # interleaved: a busy neighbour slows both alike
        plain.append(timed(plain_run, calls))
        with dyngraph.trace(stats="none"):
            observed.append(timed(observed_run, calls))
    ratio = statistics.median(observed) / statistics.median(plain)
    best = min(observed) / min(plain)
    print(f"{name:<6} plain {statistics.median(plain) * 1e6:8.1f} µs/step   observed "
          f"{statistics.median(observed) * 1e6:8.1f} µs/step   ratio {ratio:.2f} "
          f"(best {best:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 5 if args.quick else 15
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); {rounds} rounds")
    for name, make in (("tiny", tiny), ("mlp", mlp)):
        measure(name, make, rounds)


if __name__ == "__main__":
    main()
