"""What Python at the pause costs: a step, a step followed by reading the frame (what the
debugger does at every pause), and single inspect / eval round trips.

    python bench/frame_view.py [--rounds 7] [--steps 40]

Interleaved rounds in one run, medians, BLAS on one thread; the script runs in a child as
under ``dyngraph debug``. A running script pays nothing: frames are captured only when it
pauses, and only what is asked for is evaluated.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from dyngraph.debug import Session  # noqa: E402

SCRIPT = '''
import dyngraph as torch
from dyngraph import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        big = torch.randn(1000, 1000)
        h = self.fc(x).tanh()
        return self.head(h)


torch.manual_seed(0)
net = Net()
for step in range(100000):
    loss = net(torch.randn(64, 256)).pow(2).mean()
    loss.backward()
'''


def wait_paused(session: Session) -> None:
    while not session.state.paused:
        session.poll(0.001)
        if session.state.finished:
            raise SystemExit(f"the script ended: {session.state}")


def step_times(session: Session, steps: int, inspect: bool) -> float:
    started = time.perf_counter()
    for _ in range(steps):
        session.step_op()
        wait_paused(session)
        if inspect:
            session.inspect()
    return (time.perf_counter() - started) / steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "net.py")
        with open(path, "w") as f:
            f.write(SCRIPT)
        session = Session.start(path)
        try:
            wait_paused(session)
            for _ in range(6):  # into forward, where the locals include a 1M-element tensor
                session.step_op()
                wait_paused(session)
            session.watch("loss.item() if 'loss' in dir() else None")
            plain, looked, inspect, evaluate = [], [], [], []
            for _ in range(args.rounds):
                plain.append(step_times(session, args.steps, False))
                looked.append(step_times(session, args.steps, True))
                t = time.perf_counter()
                for _ in range(args.steps):
                    session.inspect()
                inspect.append((time.perf_counter() - t) / args.steps)
                t = time.perf_counter()
                for _ in range(args.steps):
                    session.eval("h.shape if 'h' in dir() else None")
                evaluate.append((time.perf_counter() - t) / args.steps)
        finally:
            session.close()
    med = statistics.median
    print(f"python {sys.version.split()[0]}, {args.rounds} interleaved rounds of "
          f"{args.steps}, medians (wall clock)")
    rows = [("step (n) alone", plain), ("step + frame view (what the UI does)", looked),
            ("inspect() round trip (stack, locals, 1 watch)", inspect),
            ("eval('h.shape') round trip", evaluate)]
    for label, times in rows:
        print(f"  {label:<48} {med(times) * 1e3:7.2f} ms")
    print(f"  ratio step + view / step alone: {med(looked) / med(plain):.2f}")


if __name__ == "__main__":
    main()
