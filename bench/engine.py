"""Engine speed, measured side by side in one run: dyngraph vs PyTorch vs hand-written numpy.

    OPENBLAS_NUM_THREADS=1 python bench/engine.py

1. Tiny ops: a chain of 1000 alternating add/mul on shape (4,), forward + backward, per op.
   Goal: dyngraph <= 0.7x PyTorch eager.
2. MLP 784-256-128-10, batch 64, one SGD step (forward, cross-entropy, backward, update).
   Goal: dyngraph <= 1.2x hand-written numpy and faster than PyTorch with one thread.
Contenders run in interleaved rounds (each round times every contender once, in turn), so a
busy neighbour slows all of them alike. Each figure is the median over rounds of wall-clock
time per call; the best round's CPU time (``time.process_time``) is printed beside it,
labelled, as the figure another process's load disturbs least. Ratios use the medians.

    python bench/engine.py --rounds 31 --baseline main

``--rounds``: more rounds on a busy machine. ``--baseline REV``: the engine of git revision
REV (``git archive`` of its ``dyngraph/``, imported under another name) runs as one more
contender in the same rounds, so a change is measured side by side with what it changes.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import importlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import dyngraph  # noqa: E402

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None

CHAIN = 1000
BATCH, SIZES, LR = 64, (784, 256, 128, 10), 0.01


ROUNDS = 15


class Timing:
    """One contender's per-call times: wall-clock median and best CPU, over the rounds."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def best_cpu(self) -> float:
        return min(self.cpu)


def interleaved(contenders: dict[str, Callable[[], object]], number: int,
                rounds: int = ROUNDS) -> dict[str, Timing]:
    """Time every contender once per round, in turn; ``number`` calls per measurement.

    Each round starts one contender further along: where a contender runs in a round
    matters (measured: the second of two dyngraph engines ran 3-5% faster than the first,
    which follows numpy, whichever engine it was), so every contender takes every place
    equally often."""
    timings = {name: Timing() for name in contenders}
    for fn in contenders.values():
        fn()  # warm up
    order = list(contenders.items())
    for r in range(rounds):
        shift = r % len(order)
        for name, fn in order[shift:] + order[:shift]:
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(number):
                fn()
            timings[name].wall.append((time.perf_counter() - w0) / number)
            timings[name].cpu.append((time.process_time() - c0) / number)
    return timings


def show(label: str, t: Timing, scale: float, unit: str) -> None:
    print(f"  {label:28s} {t.median * scale:8.2f} {unit} median wall   "
          f"({t.best_cpu * scale:.2f} {unit} best CPU)")


# -- tiny ops --------------------------------------------------------------------------------
def chain(lib: object, x: object, w: object) -> None:
    y = x
    for i in range(CHAIN):
        y = y * w if i % 2 else y + w
    y.sum().backward()  # type: ignore[attr-defined]


def numpy_chain(x: np.ndarray, w: np.ndarray) -> None:
    y = x
    for i in range(CHAIN):
        y = y * w if i % 2 else y + w


# -- MLP -------------------------------------------------------------------------------------
def init_weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:], strict=True):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return params


def data(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return x, y


def numpy_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    w1, b1, w2, b2, w3, b3 = params
    h1 = x @ w1 + b1
    a1 = np.maximum(h1, 0)
    h2 = a1 @ w2 + b2
    a2 = np.maximum(h2, 0)
    z = a2 @ w3 + b3
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    s = e.sum(axis=1, keepdims=True)
    logp = z - zmax - np.log(s)
    rows = np.arange(len(y))
    loss = -logp[rows, y].mean()
    dz = e / s
    dz[rows, y] -= 1
    dz /= len(y)
    gw3 = a2.T @ dz
    gb3 = dz.sum(0)
    da2 = dz @ w3.T
    da2 *= h2 > 0
    gw2 = a1.T @ da2
    gb2 = da2.sum(0)
    da1 = da2 @ w2.T
    da1 *= h1 > 0
    gw1 = x.T @ da1
    gb1 = da1.sum(0)
    for p, g in zip(params, (gw1, gb1, gw2, gb2, gw3, gb3), strict=True):
        p -= LR * g
    return float(loss)


def step(lib: object, params: list, x: object, y: object) -> float:
    """One SGD step of the MLP, written once for every PyTorch-shaped library."""
    w1, b1, w2, b2, w3, b3 = params
    a1 = (x @ w1 + b1).relu()
    a2 = (a1 @ w2 + b2).relu()
    logp = (a2 @ w3 + b3).log_softmax(1)
    loss = -logp.gather(1, y.unsqueeze(1)).mean()  # type: ignore[attr-defined]
    for p in params:
        p.grad = None
    loss.backward()
    with lib.no_grad():  # type: ignore[attr-defined]
        for p in params:
            p.sub_(p.grad, alpha=LR)
    return float(loss.item())


def dyngraph_step(params: list, x: dyngraph.Tensor, y: dyngraph.Tensor) -> float:
    return step(dyngraph, params, x, y)


def torch_step(params: list, x: object, y: object) -> float:
    return step(torch, params, x, y)


def check_same_losses() -> None:
    """The three MLPs compute the same thing: a few steps from the same weights agree."""
    x, y = data()
    np_params = init_weights()
    dg_params = [dyngraph.tensor(p.copy(), requires_grad=True) for p in init_weights()]
    xs, ys = dyngraph.from_numpy(x), dyngraph.from_numpy(y)
    for _ in range(3):
        a = numpy_step(np_params, x, y)
        b = dyngraph_step(dg_params, xs, ys)
        assert abs(a - b) < 1e-4, (a, b)


def baseline_engine(rev: str, into: Path) -> object:
    """The ``dyngraph`` package of git revision ``rev``, imported as ``dyngraph_baseline``
    (the engine imports itself relatively, so a renamed copy runs beside this one)."""
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "dyngraph"],
                             capture_output=True, check=False)
    if archive.returncode:
        sys.exit(f"engine.py: no dyngraph/ at git revision {rev!r}: "
                 f"{archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    (into / "dyngraph").rename(into / "dyngraph_baseline")
    sys.path.insert(0, str(into))
    return importlib.import_module("dyngraph_baseline")


def engines(baseline: object | None) -> dict[str, object]:
    """The engines measured: this checkout's, and the baseline's if one was asked for."""
    return {"dyngraph": dyngraph} if baseline is None else {
        "dyngraph": dyngraph, "dyngraph (baseline)": baseline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds")
    parser.add_argument("--baseline", metavar="REV",
                        help="also time the engine of this git revision, side by side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args.rounds, None if args.baseline is None else baseline_engine(args.baseline,
                                                                            Path(tmp)))


def run(rounds: int, baseline: object | None) -> None:
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}; "
          f"{rounds} interleaved rounds")
    if torch is not None:
        torch.set_num_threads(1)
    rows: list[tuple[str, float]] = []

    xn, wn = np.ones(4, np.float32), np.full(4, 0.999, np.float32)
    tiny: dict[str, Callable[[], object]] = {
        "numpy forward only": lambda: numpy_chain(xn, wn),
    }
    for name, lib in engines(baseline).items():
        xd = lib.ones(4, requires_grad=True)  # type: ignore[attr-defined]
        wd = lib.full((4,), 0.999, requires_grad=True)  # type: ignore[attr-defined]
        tiny[f"{name} fwd+bwd"] = functools.partial(chain, lib, xd, wd)
    if torch is not None:
        xt = torch.ones(4, requires_grad=True)
        wt = torch.full((4,), 0.999, requires_grad=True)
        tiny["torch fwd+bwd"] = lambda: chain(torch, xt, wt)
    t = interleaved(tiny, 3, rounds)
    print("\ntiny ops (chain of 1000 add/mul on shape (4,)), per op:")
    for name, timing in t.items():
        show(name, timing, 1e6 / CHAIN, "us")
    if torch is not None:
        for name in engines(baseline):
            rows.append((f"tiny op: {name} / torch (goal <= 0.70)",
                         t[f"{name} fwd+bwd"].median / t["torch fwd+bwd"].median))

    check_same_losses()
    x, y = data()
    np_params = init_weights()
    mlp: dict[str, Callable[[], object]] = {
        "numpy by hand": lambda: numpy_step(np_params, x, y),
    }
    for name, lib in engines(baseline).items():
        params = [lib.tensor(p, requires_grad=True)  # type: ignore[attr-defined]
                  for p in init_weights()]
        xs, ys = lib.from_numpy(x), lib.from_numpy(y)  # type: ignore[attr-defined]
        mlp[name] = functools.partial(step, lib, params, xs, ys)
    if torch is not None:
        pt_params = [torch.tensor(p, requires_grad=True) for p in init_weights()]
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        mlp["torch (1 thread)"] = lambda: torch_step(pt_params, xt, yt)
    m = interleaved(mlp, 10, rounds)
    print("\nMLP 784-256-128-10, batch 64, one SGD step:")
    for name, timing in m.items():
        show(name, timing, 1e3, "ms")
    for name in engines(baseline):
        rows.append((f"MLP step: {name} / numpy (goal <= 1.20)",
                     m[name].median / m["numpy by hand"].median))
        if torch is not None:
            rows.append((f"MLP step: {name} / torch (goal < 1.00)",
                         m[name].median / m["torch (1 thread)"].median))

    print("\nratios (medians of wall-clock time):")
    for name, ratio in rows:
        print(f"  {name:56s} {ratio:5.2f}")


if __name__ == "__main__":
    main()
