"""Debug runtime speed: breakpoints that never hit vs ``dyngraph record``; event throughput.

    OPENBLAS_NUM_THREADS=1 python bench/runtime.py [--repeat 3]

Prints, measured side by side in one run (medians of ``--repeat`` alternating runs):

1. wall time of ``dyngraph record`` of a training script, and of a headless debug session
   over the same script with one breakpoint of every kind set, none of which ever hits
   (ratio session / record; the target is <= 1.1);
2. the rate at which events reach the parent (``Session.poll``) from a script that does
   nothing but small ops (target >= 100,000 events/s).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from dyngraph.debug import Breakpoint, Session  # noqa: E402
from dyngraph.debug.commands import run_record  # noqa: E402

TRAIN = textwrap.dedent('''
    """An MLP trained for a few hundred steps: the shape of a real (small) training run."""
    import numpy as np
    import dyngraph as torch
    from dyngraph import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    y = torch.tensor(np.arange(32) % 10)
    for step in range({steps}):
        opt.zero_grad()
        h = model(x)
        h = h * 1.0 + 0.0
        h = h.tanh()
        loss = nn.functional.cross_entropy(h, y)
        loss.backward()
        opt.step()
''')

CHAIN = textwrap.dedent('''
    """Nothing but small ops: the event rate is all there is to measure."""
    import dyngraph as torch

    x = torch.ones(4)
    for i in range({ops} // 2):
        x = x * 1.0
        x = x + 0.0
''')


def never_hit(script: str) -> list[Breakpoint]:
    """One breakpoint of each kind, placed so that none ever hits."""
    return [
        Breakpoint.op("conv2d"),
        Breakpoint.module("decoder.*"),
        Breakpoint.at_line(script, 10_000),
        Breakpoint.at_iteration(10**9),
        Breakpoint.nan(),
        Breakpoint.grad_norm(1e30),
        Breakpoint.grad_norm(1e30, scope="global"),
        Breakpoint.op("matmul", condition="max > 1e30"),
    ]


class Cost:
    """Wall time, the child's CPU time and this process's CPU time of one run.

    CPU times stay meaningful on a busy machine where wall times wander; the child's is
    read from ``RUSAGE_CHILDREN`` (every run reaps its child before returning).
    """

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.child = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.parent = time.process_time()

    def done(self) -> tuple[float, float, float]:
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (time.perf_counter() - self.wall,
                child.ru_utime + child.ru_stime - self.child.ru_utime - self.child.ru_stime,
                time.process_time() - self.parent)


def time_record(script: str, out: str, args: Sequence[str] = ()) -> tuple[float, float, float]:
    """``dyngraph record`` run in this process (so both sides pay the same start-up)."""
    ns = argparse.Namespace(output=out, stats="cheap", values="none", script=script,
                            args=list(args), backend="auto")
    cost = Cost()
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        status = run_record(ns)
    if status != 0:
        raise SystemExit(f"record failed with status {status}")
    return cost.done()


def time_session(script: str, breakpoints: list[Breakpoint], args: Sequence[str] = (),
                 **options: object) -> tuple[tuple[float, float, float], int]:
    cost = Cost()
    session = Session.start(script, args, breakpoints=breakpoints, pause_at_start=False,
                            **options)  # type: ignore[arg-type]
    n = 0
    try:
        while not session.state.finished:
            events = session.poll(0.05)
            n += len(events)
            if session.state.paused:
                raise SystemExit(f"a breakpoint hit: {session.state.description}")
        n += len(session.poll())
    finally:
        session.close()
    return cost.done(), n


def throughput(script: str) -> tuple[float, int, float, float]:
    """Events per second as seen by the parent (first to last event), and the child's and
    this process's CPU time for the run: on cores of their own, the rate would be bounded by
    events / max(child CPU, parent CPU)."""
    cost = Cost()
    session = Session.start(script, stats="none", pause_at_start=False, keep_values=False)
    first = last = 0.0
    n = 0
    try:
        while True:
            events = session.poll(0.05)
            if events:
                now = time.perf_counter()
                first = first or now
                last = now
                n += len(events)
            if session.state.finished:
                n += len(session.poll())
                break
    finally:
        session.close()
    _, child, parent = cost.done()
    return n / max(last - first, 1e-9), n, child, parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=300_000)
    ns = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dyngraph-bench-"))
    train = tmp / "train.py"
    train.write_text(TRAIN.format(steps=ns.steps))
    chain = tmp / "chain.py"
    chain.write_text(CHAIN.format(ops=ns.ops))
    out = str(tmp / "run.dgtrace")
    bps = never_hit(str(train))

    rows: dict[str, list[tuple[float, float, float]]] = {
        "record": [], "plain": [], "session": [], "values": []}
    events = 0
    for _ in range(ns.repeat):
        rows["record"].append(time_record(str(train), out))
        rows["plain"].append(time_session(str(train), [], stats="cheap", keep_values=False)[0])
        cost, events = time_session(str(train), bps, stats="cheap", keep_values=False)
        rows["session"].append(cost)
        rows["values"].append(time_session(str(train), bps, stats="cheap")[0])
    med = {name: tuple(statistics.median(c[i] for c in costs) for i in range(3))
           for name, costs in rows.items()}
    print(f"training script: {ns.steps} steps, {events:,} events per run, medians of "
          f"{ns.repeat} (stats=cheap)")
    print(f"  {'':<44} {'wall':>8} {'child CPU':>10} {'parent CPU':>11}   ratio to record")
    labels = {"record": "dyngraph record",
              "plain": "session, no breakpoints",
              "session": "session, 8 breakpoints that never hit",
              "values": "  ... and keeping values (debug default)"}
    base = med["record"]
    for name, label in labels.items():
        wall, child, parent = med[name]
        print(f"  {label:<44} {wall:7.3f}s {child:9.3f}s {parent:10.3f}s   "
              f"wall {wall / base[0]:.2f}x, child CPU {child / base[1]:.2f}x")

    runs = [throughput(str(chain)) for _ in range(ns.repeat)]
    rate = statistics.median(r[0] for r in runs)
    n = runs[0][1]
    child = statistics.median(r[2] for r in runs)
    parent = statistics.median(r[3] for r in runs)
    print(f"event throughput to the parent: {rate:,.0f} events/s wall "
          f"({n:,} events per run, stats=none)")
    print(f"  CPU per event: child {child / n * 1e6:.2f} us (start-up included), "
          f"parent {parent / n * 1e6:.2f} us; with a core each: "
          f"{n / max(child, parent):,.0f} events/s")

if __name__ == "__main__":
    main()
