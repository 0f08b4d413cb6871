"""What capturing a PyTorch script costs: step-time ratios to plain PyTorch, in one run.

    python bench/torch_overhead.py            # everything (a few minutes)
    python bench/torch_overhead.py --quick    # fewer rounds, for a smoke run
    python bench/torch_overhead.py --against /path/to/other/checkout --workloads mlp,tiny
                                              # before/after, side by side

1. In process: an MLP 784-256-128-10 (batch 64, SGD), a pre-norm attention block (d=64,
   4 heads, seq 32, batch 8, SGD) and a 2-layer GPT (d=64, 4 heads, seq 32, batch 8, AdamW)
   training step, each plain, under an empty ``TorchFunctionMode`` (``empty mode``: what
   PyTorch's dispatch to a Python mode costs, the floor of a capture built on one), and
   under ``dyngraph.trace`` with ``stats="none"`` (structure only), ``"cheap"`` (norms and
   exact NaN/Inf counts of every output and gradient) and ``"full"``, and under
   ``dyngraph.record`` to a file. Goals (issue 24): none <= 1.25x,
   cheap <= 1.5x, full <= 2.5x. Two more workloads: tiny ops (ng-video-lecture's batching:
   100 int64 slices x2, a stack, an embedding loss), whose goal is a cost per recorded op
   (none <= 6 us, cheap <= 10 us: the traced step's time less the plain one, over the ops),
   and a 6-layer GPT (d=256, seq 128, batch 8), closer to real training: cheap <= 1.25x.
2. Through the debug runtime (a child process, as the commands run it): the GPT script
   under ``dyngraph record``'s settings and under ``dyngraph debug``'s (stats full, values
   kept for the inspector) without a value breakpoint (goal: <= 1.1x record; no host read
   per op), the same at record's ``--stats cheap`` (what keeping values for the inspector
   costs), with a NaN breakpoint that never hits (it reads each op's statistics as it
   runs, to stop at the exact op), and with that breakpoint at ``--stats cheap``. The
   script times its own steps.

Every figure is a ratio of wall-clock medians over interleaved rounds (a busy neighbour
slows all modes alike instead of skewing one), measured side by side in this run, with
BLAS and PyTorch on one thread. The best round's ratio is shown beside it.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import dyngraph  # noqa: E402

torch.set_num_threads(1)


# -- workloads ---------------------------------------------------------------------------
def mlp_step() -> Callable[[], None]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = att.masked_fill(torch.ones(t, t).tril() == 0, float("-inf"))
        return self.proj((F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int = 64, d: int = 64, layers: int = 2, block: int = 32) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def block_step() -> Callable[[], None]:
    torch.manual_seed(0)
    model = Block()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, target = torch.randn(8, 32, 64), torch.randn(8, 32, 64)

    def step() -> None:
        opt.zero_grad()
        F.mse_loss(model(x), target).backward()
        opt.step()

    return step


def gpt_step(layers: int = 2, d: int = 64, seq: int = 32) -> Callable[[], None]:
    torch.manual_seed(0)
    model = GPT(d=d, layers=layers, block=seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids, targets = torch.randint(0, 64, (8, seq)), torch.randint(0, 64, (8, seq))

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        logits = model(ids)
        F.cross_entropy(logits.view(-1, 64), targets.view(-1)).backward()
        opt.step()

    return step


def gpt6_step() -> Callable[[], None]:
    """Closer to real training: 6 layers, d=256, seq 128, batch 8, AdamW."""
    return gpt_step(layers=6, d=256, seq=128)


def tiny_ops_step() -> Callable[[], None]:
    """Many tiny ops (ng-video-lecture's batching): 100 int64 slices of a token tensor,
    a stack, and a small loss (an embedding, cross-entropy, SGD)."""
    torch.manual_seed(0)
    data = torch.randint(0, 32, (10_000,))
    starts = torch.randint(0, len(data) - 9, (100,)).tolist()
    emb = nn.Embedding(32, 32)
    opt = torch.optim.SGD(emb.parameters(), lr=0.01)

    def step() -> None:
        x = torch.stack([data[i:i + 8] for i in starts])
        y = torch.stack([data[i + 1:i + 9] for i in starts])
        opt.zero_grad()
        F.cross_entropy(emb(x).view(-1, 32), y.view(-1)).backward()
        opt.step()

    return step


CLOCK = time.perf_counter
"""Wall clock; ``--cpu`` takes the process's CPU time instead (steadier on a busy machine,
blind to waiting: labelled CPU wherever it is shown)."""


class EmptyMode(TorchFunctionMode):
    """A torch-function mode that only calls through: what PyTorch's own dispatch to a
    Python mode costs per call, the floor of any capture built on one."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


# -- in process ----------------------------------------------------------------------------
def time_modes(step: Callable[[], None], rounds: int, steps: int, tmp: str
               ) -> dict[str, list[float]]:
    def run() -> float:
        t0 = CLOCK()
        for _ in range(steps):
            step()
        return (CLOCK() - t0) / steps

    def traced(stats: str) -> Callable[[], float]:
        def go() -> float:
            with dyngraph.trace(stats=stats, backend="torch"):
                return run()
        return go

    def recorded() -> float:
        with dyngraph.record(os.path.join(tmp, "bench.dgtrace"), stats="cheap", backend="torch"):
            return run()

    def empty_mode() -> float:
        with EmptyMode():
            return run()

    modes: dict[str, Callable[[], float]] = {
        "plain": run, "empty mode": empty_mode,
        "trace:none": traced("none"), "trace:cheap": traced("cheap"),
        "trace:full": traced("full"), "record:cheap": recorded,
    }
    for go in modes.values():  # warm up every path once
        go()
    times: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(rounds):
        for name, go in modes.items():
            gc.collect()
            times[name].append(go())
    return times


GOALS = {"trace:none": 1.25, "trace:cheap": 1.5, "trace:full": 2.5}
TINY_GOALS_US = {"trace:none": 6.0, "trace:cheap": 10.0}
"""The tiny-op workload's goals: microseconds per recorded op over the plain step."""


def ops_per_step(step: Callable[[], None]) -> int:
    with dyngraph.trace(stats="none", backend="torch") as t:
        step()
    return sum(1 for e in t.events if e.kind == "op")


def report(name: str, times: dict[str, list[float]], ops: int = 0,
           goals: dict[str, float] = GOALS, per_op_goals: dict[str, float] | None = None
           ) -> None:
    """Print each mode's ratio to plain (and its cost per op, given ``ops``), beside its
    goal: a ratio (``goals``) or microseconds per op (``per_op_goals``)."""
    base = statistics.median(times["plain"])
    print(f"\n{name}: plain step {base * 1e3:.3f} ms (median of {len(times['plain'])} rounds)"
          + (f", {ops} ops per step" if ops else ""))
    for mode, values in times.items():
        if mode == "plain":
            continue
        ratio = statistics.median(values) / base
        best = min(values) / min(times["plain"])
        if per_op_goals is not None:
            goal = (f"(goal <= {per_op_goals[mode]:g} us/op)" if mode in per_op_goals
                    else "")
        else:
            goal = f"(goal <= {goals[mode]}x)" if mode in goals else ""
        per_op = (f"  {(statistics.median(values) - base) / ops * 1e6:6.1f} us/op"
                  if ops else "")
        print(f"  {mode:<13} {ratio:6.2f}x   best-of {best:5.2f}x{per_op}  {goal}")


# -- through the debug runtime ----------------------------------------------------------------
SCRIPT = textwrap.dedent("""
    import statistics, sys, time
    import torch
    sys.path.insert(0, {bench!r})
    from torch_overhead import gpt_step
    torch.set_num_threads(1)
    step = gpt_step()
    for _ in range(3):
        step()
    times = []
    for _ in range({steps}):
        t0 = time.{clock}()
        step()
        times.append(time.{clock}() - t0)
    print("STEP", statistics.median(times))
""")


def runtime_modes(rounds: int, steps: int, tmp: str) -> dict[str, list[float]]:
    from dyngraph.debug import Breakpoint, Session

    script = os.path.join(tmp, "gpt_script.py")
    with open(script, "w") as f:
        f.write(SCRIPT.format(bench=os.path.dirname(os.path.abspath(__file__)), steps=steps,
                              clock=CLOCK.__name__))
    settings = {
        "record": dict(stats="cheap", pause_at_start=False, post_mortem=False,
                       keep_values=False, script_breakpoints=False),
        "debug": dict(stats="full", pause_at_start=False),
        "debug --stats cheap": dict(stats="cheap", pause_at_start=False),
        "debug + NaN breakpoint": dict(stats="full", pause_at_start=False,
                                       breakpoints=[Breakpoint.nan()]),
        "debug --stats cheap + NaN": dict(stats="cheap", pause_at_start=False,
                                          breakpoints=[Breakpoint.nan()]),
    }

    def run(options: dict[str, object]) -> float:
        session = Session.start(script, (), backend="torch", **options)  # type: ignore[arg-type]
        out = []
        try:
            while not session.state.finished:
                for e in session.poll(0.1):
                    if e.kind == "output":
                        out.append(e.text)  # type: ignore[attr-defined]
                if session.state.paused:
                    raise RuntimeError(f"the benchmark paused: {session.state}")
            for e in session.poll():
                if e.kind == "output":
                    out.append(e.text)  # type: ignore[attr-defined]
        finally:
            session.close()
        line = [x for x in "".join(out).splitlines() if x.startswith("STEP")]
        return float(line[-1].split()[1])

    times: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(rounds):
        for name, options in settings.items():
            times[name].append(run(options))
    return times


def report_runtime(times: dict[str, list[float]]) -> None:
    base = statistics.median(times["record"])
    print(f"\n2-layer GPT step through the debug runtime: `dyngraph record` "
          f"{base * 1e3:.2f} ms per step (median of {len(times['record'])} runs)")
    notes = {"debug": "(goal <= 1.1x; no value breakpoint: no host read per op)",
             "debug --stats cheap": "(record's statistics: what keeping values costs)",
             "debug + NaN breakpoint": "(reads each op's statistics as it runs)",
             "debug --stats cheap + NaN": "(record's statistics, read per op)"}
    for mode, note in notes.items():
        ratio = statistics.median(times[mode]) / base
        best = min(times[mode]) / min(times["record"])
        print(f"  {mode:<26} {ratio:5.2f}x record   best-of {best:5.2f}x  {note}")


WORKLOADS: dict[str, tuple[str, Callable[[], Callable[[], None]]]] = {
    "mlp": ("MLP 784-256-128-10, batch 64, SGD", mlp_step),
    "attention": ("attention block (d=64, 4 heads, seq 32, batch 8), SGD", block_step),
    "gpt2": ("2-layer GPT (d=64, 4 heads, seq 32, batch 8), AdamW", gpt_step),
    "tiny": ("tiny ops (100 int64 slices x2, stack, embedding loss), SGD", tiny_ops_step),
    "gpt6": ("6-layer GPT (d=256, 4 heads, seq 128, batch 8), AdamW", gpt6_step),
}


def measure(names: list[str], rounds: int, steps: int, runs: int, tmp: str
            ) -> dict[str, dict[str, list[float]]]:
    """Every mode's step times of each workload named (``runtime``: the debug runtime's)."""
    found: dict[str, dict[str, list[float]]] = {}
    for name in names:
        if name == "runtime":
            found[name] = runtime_modes(runs, steps * 2, tmp)
            continue
        n = steps * 4 if name == "tiny" else max(1, steps // 3) if name == "gpt6" else steps
        found[name] = time_modes(WORKLOADS[name][1](), rounds, n, tmp)
    return found


def print_report(found: dict[str, dict[str, list[float]]]) -> None:
    for name, times in found.items():
        if name == "runtime":
            report_runtime(times)
        elif name == "tiny":
            tiny = tiny_ops_step()
            report(WORKLOADS[name][0], times, ops_per_step(tiny), per_op_goals=TINY_GOALS_US)
        elif name == "gpt6":
            report(WORKLOADS[name][0], times, goals={**GOALS, "trace:cheap": 1.25})
        else:
            report(WORKLOADS[name][0], times)


def figures(name: str, times: dict[str, list[float]], ops: int) -> dict[str, float]:
    """One run's figure per mode: the ratio of medians to the base (plain, or ``record``
    through the runtime), or for the tiny ops the cost per op in microseconds."""
    base_mode = "record" if name == "runtime" else "plain"
    base = statistics.median(times[base_mode])
    out = {}
    for mode, values in times.items():
        if mode == base_mode:
            continue
        m = statistics.median(values)
        out[mode] = (m - base) / ops * 1e6 if name == "tiny" else m / base
    return out


def compare(against: str, names: list[str], runs: int, rounds: int, quick: bool) -> None:
    """Run this bench in child processes on ``against``'s dyngraph and on this one's, taking
    turns ``runs`` times (a busy neighbour slows both alike), and print each figure side
    by side: the median over the runs of each run's own ratio."""
    import json
    import subprocess

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"before": os.path.abspath(against), "after": here}
    got: dict[str, dict[str, dict[str, list[float]]]] = {k: {} for k in trees}
    tiny_ops = ops_per_step(tiny_ops_step()) if "tiny" in names else 1
    for _ in range(runs):
        for label, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=tree)
            cmd = [sys.executable, os.path.abspath(__file__), "--json", "--rounds",
                   str(rounds), "--workloads", ",".join(names)] + (["--quick"] if quick else [])
            cmd += ["--cpu"] if CLOCK is time.process_time else []
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            line = [x for x in done.stdout.splitlines() if x.startswith("JSON ")][-1]
            for name, times in json.loads(line[5:]).items():
                for mode, value in figures(name, times, tiny_ops).items():
                    got[label].setdefault(name, {}).setdefault(mode, []).append(value)
    print(f"\nbefore: {trees['before']}\nafter:  {trees['after']}\n"
          f"median over {runs} alternating runs ({rounds} rounds each) of each run's own "
          f"figure, {'CPU time' if CLOCK is time.process_time else 'wall clock'}")
    for name in names:
        unit = "us/op" if name == "tiny" else "x record" if name == "runtime" else "x"
        print(f"\n{WORKLOADS[name][0] if name in WORKLOADS else 'debug runtime, GPT'} ({unit})")
        for mode, before in got["before"].get(name, {}).items():
            after = got["after"][name][mode]
            print(f"  {mode:<26} {statistics.median(before):7.2f} -> "
                  f"{statistics.median(after):7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and steps")
    parser.add_argument("--workloads", default=",".join([*WORKLOADS, "runtime"]),
                        help="which to run, comma-separated: "
                             + ", ".join([*WORKLOADS, "runtime"]))
    parser.add_argument("--against", metavar="TREE",
                        help="compare with the dyngraph of another checkout, side by side")
    parser.add_argument("--runs", type=int, default=5,
                        help="with --against: alternating runs of each tree")
    parser.add_argument("--rounds", type=int,
                        help="interleaved rounds (of each run, with --against)")
    parser.add_argument("--cpu", action="store_true",
                        help="time the process's CPU, not the wall clock (a busy machine)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time
    names = [n for n in args.workloads.split(",") if n]
    rounds, steps, runs = (3, 5, 1) if args.quick else (9, 20, 3)
    if args.rounds:
        rounds = runs = args.rounds
    if args.against:
        compare(args.against, names, args.runs, rounds, args.quick)
        return
    print(f"dyngraph {dyngraph.__version__}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch thread(s), Python {sys.version.split()[0]}, "
          f"{'CPU time' if args.cpu else 'wall clock'}")
    with tempfile.TemporaryDirectory() as tmp:
        found = measure(names, rounds, steps, runs, tmp)
    if args.json:
        import json

        print("JSON " + json.dumps(found))
    else:
        print_report(found)


if __name__ == "__main__":
    main()
