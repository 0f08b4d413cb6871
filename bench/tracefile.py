"""Reading trace files: lazy open versus decoding every event, side by side, in events/s.

    OPENBLAS_NUM_THREADS=1 python bench/tracefile.py            # ~1 min
    OPENBLAS_NUM_THREADS=1 python bench/tracefile.py --quick    # smaller, for a smoke run

Records two demos (the spirals MLP and rnn_varlen, the GRU over sequences of varying length)
with stats="cheap" and with stats="full", then for each file measures, in interleaved rounds
keeping each measurement's fastest (process CPU time, file reads included, so a busy
neighbour slows all alike):

- open: ``read_trace`` plus ``iterations`` (frames indexed and checksummed, nothing decoded);
- iter_events: every event built as an object, streamed (bounded memory);
- walk: every iteration's ``events`` of the opened trace (frames decoded into the cache);
- graphs: every iteration's ``graph`` (its rows decoded; the nodes are made when first
  looked into);
- nodes: every iteration's graph with its nodes made (``graph.nodes``): reading plus every
  graph, end to end.

Then the bytes of a repeated iteration in each frame format against format 3's (an MLP
784-256-128-10 and a 1,000-op chain, each stats mode; frames cut every 1,024 events).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dyngraph as dg  # noqa: E402
from demos import mlp, rnn_varlen  # noqa: E402
from dyngraph.capture.tracefile import iter_events  # noqa: E402


def record(tmp: str, name: str, main: Callable[..., object], steps: int, stats: str) -> str:
    path = os.path.join(tmp, f"{name}-{stats}.dgtrace")
    with contextlib.redirect_stdout(io.StringIO()), dg.record(path, stats=stats):
        main(steps=steps)
    return path


def measure(path: str, rounds: int) -> dict[str, float]:
    """Seconds (best of ``rounds``) of each way of reading ``path``."""

    def open_lazy() -> None:
        t = dg.read_trace(path)
        _ = t.iterations

    def stream() -> None:
        for _ in iter_events(path):
            pass

    def walk() -> None:
        for it in dg.read_trace(path).iterations:
            _ = it.events

    def graphs() -> None:
        for it in dg.read_trace(path).iterations:
            _ = it.graph

    def nodes() -> None:
        for it in dg.read_trace(path).iterations:
            _ = it.graph.nodes

    ways = {"open": open_lazy, "iter_events": stream, "walk": walk, "graphs": graphs,
            "nodes": nodes}
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(rounds):
        for name, fn in ways.items():
            gc.collect()
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    args = parser.parse_args()
    mlp_steps, rnn_steps, rounds = (100, 60, 2) if args.quick else (1000, 300, 5)
    print(f"dyngraph {dg.__version__}, Python {sys.version.split()[0]}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    warnings.simplefilter("ignore")
    print(f"{'recording':<18}{'events':>9}{'B/event':>9}  {'open':>11}{'iter_events':>13}"
          f"{'walk':>11}{'graphs':>11}{'nodes':>11}   (events/s; full decode / open)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, demo, steps in (("mlp", mlp.main, mlp_steps),
                                  ("rnn_varlen", rnn_varlen.main, rnn_steps)):
            for stats in ("cheap", "full"):
                path = record(tmp, name, demo, steps, stats)
                n = sum(1 for _ in iter_events(path))
                s = measure(path, rounds)
                rate = {k: n / v for k, v in s.items()}
                print(f"{name + ':' + stats:<18}{n:>9,}{os.path.getsize(path) / n:>9.0f}  "
                      f"{rate['open']:>11,.0f}{rate['iter_events']:>13,.0f}"
                      f"{rate['walk']:>11,.0f}{rate['graphs']:>11,.0f}"
                      f"{rate['nodes']:>11,.0f}   "
                      f"(x{s['iter_events'] / s['open']:.0f} slower)")
                os.remove(path)
        print("goal: reading + every graph (nodes) >= 1,000,000 events/s")
        repeated_bytes(tmp, quick=args.quick)


def repeated_bytes(tmp: str, quick: bool) -> None:
    """A repeated iteration's bytes in frame formats 4 and 5 against format 3's."""
    from dyngraph.capture import tracefile as tf

    def saved(events: list, version: int) -> int:
        path = os.path.join(tmp, f"bytes-{version}.dgtrace")
        written, interval = tf.WRITE_VERSION, tf.FRAME_INTERVAL
        tf.WRITE_VERSION, tf.FRAME_INTERVAL = version, 1e9  # (cut every 1,024 events)
        try:
            dg.Trace(events).save(path)
        finally:
            tf.WRITE_VERSION, tf.FRAME_INTERVAL = written, interval
        return os.path.getsize(path)

    def mlp_steps(stats: str, steps: int) -> list:
        dg.manual_seed(0)
        nn = dg.nn
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10))
        opt = dg.optim.SGD(model.parameters(), lr=0.01)
        x, y = dg.randn(64, 784), dg.tensor(list(range(10)) * 6 + [0, 1, 2, 3])
        with dg.trace(stats=stats) as t:
            for _ in range(steps):
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
        return list(t.events)

    def chain_steps(stats: str, steps: int) -> list:
        x = dg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        with dg.trace(stats=stats) as t:
            for _ in range(steps):
                y = x
                for _ in range(500):
                    y = y * 1.0001 + 0.5
                y.sum().backward()
        return list(t.events)

    print("\nbytes of a repeated iteration (and against format 3's)")
    runs = (("mlp", mlp_steps, 11, 21), ("chain", chain_steps, 2, 4)) if quick else \
        (("mlp", mlp_steps, 21, 41), ("chain", chain_steps, 3, 6))
    for name, make, a, b in runs:
        for stats in ("none", "cheap", "full"):
            events = make(stats, b)
            fewer = [e for e in events if e.iteration <= a]
            per = {v: (saved(events, v) - saved(fewer, v)) / (b - a) for v in (3, 4, 5)}
            print(f"  {name + ':' + stats:<12} format 3 {per[3]:>9,.0f} B   format 4 "
                  f"{per[4]:>9,.0f} ({per[4] / per[3]:>4.0%})   format 5 {per[5]:>9,.0f} "
                  f"({per[5] / per[3]:>4.0%})")
    print("goal: a repeated iteration's bytes <= 30% of format 3's")


if __name__ == "__main__":
    main()
