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
- graphs: every iteration's ``graph`` too (decoding plus dyngraph.capture.graph's GraphBuilder),
  for scale: that part is the graph builder's, not the decoder's.
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

    ways = {"open": open_lazy, "iter_events": stream, "walk": walk, "graphs": graphs}
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
          f"{'walk':>11}{'graphs':>11}   (events/s; full decode / open)")
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
                      f"{rate['walk']:>11,.0f}{rate['graphs']:>11,.0f}   "
                      f"(x{s['iter_events'] / s['open']:.0f} slower)")
                os.remove(path)
    print("goal: full decode (iter_events, walk) >= 500,000 events/s")


if __name__ == "__main__":
    main()
