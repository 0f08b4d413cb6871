"""What recording costs, as a user feels it: step-time ratios, trace memory, reading speed and
the live stream, in one run.

    OPENBLAS_NUM_THREADS=1 python bench/overhead.py            # everything (~5 min)
    OPENBLAS_NUM_THREADS=1 python bench/overhead.py --quick    # smaller, for a smoke run
    python bench/overhead.py --only steps                      # one part (steps, long, memory,
                                                               # million, live, demos)

1. Step overhead, recorded against unrecorded, on three workloads: an MLP 784-256-128-10 at
   batch 64 with SGD, a small pre-norm attention block, and a chain of 1,000 tiny ops
   (forward and backward). Modes run in 9 interleaved rounds of 20 steps each (every round
   times every mode once, in turn, so a busy neighbour slows all modes alike). The figure
   that counts is the user's: the median over rounds of wall-clock time per step. The
   fastest round's process CPU time is printed beside it, labelled "CPU min": the figure
   another process's load disturbs least. Modes: ``off`` (no subscriber: the baseline),
   ``trace:<stats>`` (``dyngraph.trace`` into memory), ``record:<stats>`` (``dyngraph.record``
   to a file) and, for the chain, ``compiled-out`` (apply() and Module.__call__ with the
   tracer checks removed from their source).
   ``long``: the same ratios over one long recording per mode (an MLP for 3,000 steps,
   the chain for 300), 3 interleaved rounds: a recording left on grows, and what that
   costs (the cyclic collector walking a growing trace) shows only there.
2. Memory of a trace: bytes per event of an in-memory trace (stats="cheap", no values) and
   of a trace read back from its file.
3. One million events: write them to a file, open with ``read_trace``, stream them with
   ``iter_events``, and build every iteration's graph (``GraphBuilder``, as ``view`` and
   ``export`` do): events/s of the builder alone (each graph dropped after use, then every
   graph kept) and end to end from the file; wall median of the rounds, CPU min beside it.
4. The live stream (bench/runtime.py's measurements): ops/s reaching the parent from a tight
   loop under ``dyngraph debug``'s runtime with no breakpoint hit, and a debug session against
   ``dyngraph record`` on a training script: the median over interleaved rounds (the two side
   by side in each, in alternating order) of the per-round ratio, wall clock and the child's
   CPU time (the wall figure is the goal; the CPU one is what another process's load disturbs
   least).
5. ``--only demos`` (not in the default set: ~10 minutes): the same debug/record ratios on
   every bundled demo, each run to its end with no breakpoint hit.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from operator import attrgetter
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


import numpy as np  # noqa: E402

import dyngraph as dg  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
from dyngraph.capture import tracefile  # noqa: E402
from dyngraph.capture.graph import build_graphs  # noqa: E402
from dyngraph.capture.tracefile import TraceWriter, iter_events  # noqa: E402
from dyngraph.capture.tracing import make_header  # noqa: E402
from dyngraph.engine import tensor as tensor_mod  # noqa: E402


# -- workloads ---------------------------------------------------------------------------
def mlp_step() -> Callable[[], None]:
    nn, F = dg.nn, dg.nn.functional
    dg.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = dg.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = dg.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = dg.tensor(rng.integers(0, 10, 64))

    def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step


def attention_step() -> Callable[[], None]:
    """A pre-norm transformer block (4 heads, d=64, seq 32, batch 8) written with plain ops."""
    nn, F = dg.nn, dg.nn.functional
    dg.manual_seed(0)
    d, heads, seq, batch = 64, 4, 32, 8

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.norm2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x: dg.Tensor) -> dg.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, heads, d // heads).permute(
                2, 0, 3, 1, 4)
            att = F.softmax(q @ k.transpose(-2, -1) * (1.0 / (d // heads) ** 0.5), dim=-1)
            h = (att @ v).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(h)
            return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

    model = Block()
    opt = dg.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = dg.tensor(rng.standard_normal((batch, seq, d)).astype(np.float32))
    target = dg.tensor(rng.standard_normal((batch, seq, d)).astype(np.float32))

    def step() -> None:
        opt.zero_grad()
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()

    return step


# -- instrumentation compiled out ----------------------------------------------------------
def _strip_listening(fn: Callable[..., object]) -> Callable[..., object]:
    """``fn`` recompiled from its source without the tracer: every line mentioning
    ``listening`` goes, and so does the body of each ``if listening:``."""
    lines = inspect.getsource(fn).splitlines()
    out: list[str] = []
    skip_indent: int | None = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if line.strip() and indent > skip_indent:
                continue
            skip_indent = None
        if line.strip().startswith("if listening:"):
            skip_indent = indent
            continue
        if "listening" in line:
            continue
        out.append(line)
    namespace = dict(fn.__globals__)
    exec("\n".join(out), namespace)
    return namespace[fn.__name__]  # type: ignore[no-any-return]


class CompiledOut:
    """Swap in apply() (and its two-input form the operators call) and Module.__call__
    without the instrumentation, then restore them."""

    def __enter__(self) -> CompiledOut:
        self.patched: list[tuple[object, str, object]] = []
        for attr in ("apply", "_apply_binary"):
            original = getattr(tensor_mod, attr)
            stripped = _strip_listening(original)
            for name, module in list(sys.modules.items()):
                if name.startswith("dyngraph") and getattr(module, attr, None) is original:
                    self.patched.append((module, attr, original))
                    setattr(module, attr, stripped)
        module_cls = dg.nn.Module

        def call(self: dg.nn.Module, *args: object, **kwargs: object) -> object:
            if not self._hooked:
                return self.forward(*args, **kwargs)
            return self._call_traced(args, kwargs)

        self.patched.append((module_cls, "__call__", module_cls.__call__))
        module_cls.__call__ = call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, value in self.patched:
            setattr(owner, name, value)


# -- step timing -------------------------------------------------------------------------
def chain_step(n: int = 1000) -> Callable[[], None]:
    """1,000 tiny ops (alternating mul/add on shape (4,)), forward and backward."""
    x = dg.tensor(np.ones(4, np.float32), requires_grad=True)

    def step() -> None:
        y = x
        for _ in range(n // 2):
            y = y * 1.0001
            y = y + 0.5
        y.sum().backward()
        x.grad = None

    return step


class Timing:
    """Per-step times of one mode over its rounds: wall clock and process CPU time."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_min(self) -> float:
        return min(self.cpu)


def time_modes(step: Callable[[], None], rounds: int, steps: int, tmp: str,
               modes: tuple[str, ...]) -> dict[str, Timing]:
    """Every mode timed once per round, modes interleaved within each round, so a busy
    neighbour slows all modes alike. Each round runs ``steps`` steps and records both the
    wall clock (what a user feels) and process CPU time (what another process's load
    disturbs least)."""

    def run(timing: Timing) -> None:
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        timing.wall.append((time.perf_counter() - w0) / steps)
        timing.cpu.append((time.process_time() - c0) / steps)

    def go(mode: str, timing: Timing) -> None:
        kind, _, stats = mode.partition(":")
        if kind == "off":
            run(timing)
        elif kind == "compiled-out":
            with CompiledOut():
                run(timing)
        elif kind == "trace":
            with dg.trace(stats=stats):
                run(timing)
        elif kind == "record3":  # frame format 3: no iteration templates (before issue 29)
            written = tracefile.WRITE_VERSION
            tracefile.WRITE_VERSION = tracefile.FORMAT_VERSION
            try:
                with dg.record(os.path.join(tmp, "bench.dgtrace"), stats=stats):
                    run(timing)
            finally:
                tracefile.WRITE_VERSION = written
        else:
            with dg.record(os.path.join(tmp, "bench.dgtrace"), stats=stats):
                run(timing)

    for _ in range(3):
        step()
    timings = {mode: Timing() for mode in modes}
    for _ in range(rounds):
        for mode in modes:
            gc.collect()
            go(mode, timings[mode])
    return timings


def report_overhead(name: str, timings: dict[str, Timing], goals: dict[str, float]) -> None:
    base = timings["off"]
    # The load as the rounds ended: the machine is shared, and a busy neighbour shows here.
    print(f"\n{name}: unrecorded step {base.wall_median * 1e3:.3f} ms wall median, "
          f"{base.cpu_min * 1e3:.3f} ms CPU min (load average {os.getloadavg()[0]:.2f})")
    print(f"  {'mode':<14} {'wall median':>12} {'CPU min':>9}   goal (on the wall median)")
    for mode, t in timings.items():
        if mode == "off":
            continue
        wall = t.wall_median / base.wall_median
        cpu = t.cpu_min / base.cpu_min
        goal = goals.get(mode.partition(":")[2]) if mode.startswith(("trace", "record")) \
            else goals.get(mode)
        verdict = ""
        if goal is not None:
            verdict = f"<= {goal}: {'met' if wall <= goal else 'MISSED'}"
        print(f"  {mode:<14} {wall:11.3f}x {cpu:8.3f}x   {verdict}")


# -- memory --------------------------------------------------------------------------------
def trace_memory(step: Callable[[], None], steps: int, tmp: str) -> None:
    step()
    gc.collect()
    tracemalloc.start()
    with dg.trace(stats="cheap") as t:
        for _ in range(steps):
            step()
        gc.collect()
        size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = len(t.events)
    # What the workload itself holds between steps is tiny next to the trace; bound it by
    # a run without recording.
    tracemalloc.start()
    for _ in range(3):
        step()
    gc.collect()
    baseline, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\nin-memory trace (stats='cheap', no values): {n} events, "
          f"{(size - baseline) / n:.0f} bytes/event  (goal <= ~300)")
    path = os.path.join(tmp, "mem.dgtrace")
    t.save(path)
    gc.collect()
    tracemalloc.start()
    r = dg.read_trace(path)
    _ = r.iterations[-1].graph
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"trace read back from its file: {size / len(r.events):.0f} bytes/event held "
          f"(file {os.path.getsize(path) / len(r.events):.0f} bytes/event)")
    del r


# -- a million events ------------------------------------------------------------------------
def million(step: Callable[[], None], total: int, tmp: str, rounds: int) -> None:
    with dg.trace(stats="cheap") as t:
        for _ in range(40):
            step()
    template = [e for e in t.events if e.kind != "header"]
    iterations = template[-1].iteration - template[0].iteration + 1
    per_copy = len(template)
    copies = -(-total // per_copy)
    path = os.path.join(tmp, "million.dgtrace")
    # Copies of a real recording with fresh seq and iteration numbers.
    makers = {cls: ev.fast_constructor(cls) for cls in ev.EVENT_TYPES.values()}
    getters = {cls: attrgetter(*ev.FIELD_NAMES[cls.kind][2:]) for cls in ev.EVENT_TYPES.values()}
    def write(copies: int, trace_memory: bool) -> tuple[float, float]:
        gc.collect()
        if trace_memory:
            tracemalloc.start()
        t0 = time.process_time()
        seq = 0
        with TraceWriter(path, make_header("cheap", "none")) as writer:
            for c in range(copies):
                shift_it = c * iterations
                batch = []
                for e in template:
                    seq += 1
                    cls = type(e)
                    batch.append(makers[cls](seq, e.iteration + shift_it, *getters[cls](e)))
                writer.write(batch)
        seconds = time.process_time() - t0
        peak = 0.0
        if trace_memory:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return seconds, peak

    # Memory is measured on a tenth of the events (tracemalloc slows every allocation),
    # time on all of them.
    _, peak = write(copies // 10, True)
    write_s, _ = write(copies, False)
    n = copies * per_copy
    size = os.path.getsize(path)
    print(f"\n{n:,} events written in {write_s:.1f} s CPU (including building them), "
          f"{size / 1e6:.0f} MB ({size / n:.0f} bytes/event); writer peak "
          f"{peak / 1e6:.1f} MB while writing {n // 10:,} (one batch at a time)")

    gc.collect()
    tracemalloc.start()
    t0 = time.process_time()
    trace = dg.read_trace(path)
    its = trace.iterations
    count = len(trace.events)
    open_s = time.process_time() - t0
    _, peak = tracemalloc.get_traced_memory()
    t1 = time.process_time()
    graph = its[-1].graph
    key = its[-1].structure_key
    first_graph_s = time.process_time() - t1
    tracemalloc.stop()
    print(f"read_trace: {count:,} events, {len(its):,} iterations usable in {open_s:.2f} s "
          f"= {count / open_s:,.0f} events/s (goal >= 500,000); peak {peak / 1e6:.0f} MB "
          f"(file {size / 1e6:.0f} MB); last iteration's graph ({len(graph.nodes)} nodes, "
          f"key {key}) in {first_graph_s * 1e3:.1f} ms")
    del trace, its, graph
    gc.collect()
    t0 = time.process_time()
    streamed = sum(1 for _ in iter_events(path))
    stream_s = time.process_time() - t0
    print(f"iter_events: decoded all {streamed:,} events in {stream_s:.1f} s "
          f"= {streamed / stream_s:,.0f} events/s (every event built as an object)")
    build_graphs_rate(path, rounds)
    os.remove(path)


def build_graphs_rate(path: str, rounds: int) -> None:
    """Building every iteration's graph, as ``view`` and ``export`` do: GraphBuilder alone
    over decoded events (the goal), the same keeping every graph (as an export does until
    it writes them), and end to end from the file (decoding included). Each is the wall
    median of ``rounds`` runs, with the fastest run's process CPU time beside it."""
    events = list(iter_events(path))
    n = len(events)

    def measure(run: Callable[[], object]) -> tuple[float, float]:
        timing = Timing()
        for _ in range(rounds):
            gc.collect()
            w0, c0 = time.perf_counter(), time.process_time()
            run()
            timing.wall.append(time.perf_counter() - w0)
            timing.cpu.append(time.process_time() - c0)
        return n / timing.wall_median, n / timing.cpu_min

    def from_file() -> None:
        for it in dg.read_trace(path).iterations:
            _ = it.graph

    def from_file_nodes() -> None:  # (it.graph is built when first looked into)
        for it in dg.read_trace(path).iterations:
            _ = it.graph.nodes

    graphs = sum(1 for _ in build_graphs(events))
    wall, cpu = measure(lambda: sum(1 for _ in build_graphs(events)))
    print(f"GraphBuilder: {graphs:,} iteration graphs from {n:,} decoded events: "
          f"{wall:,.0f} events/s wall median of {rounds} ({cpu:,.0f} events/s CPU min)  "
          f"(goal >= 1,000,000: {'met' if wall >= 1e6 else 'MISSED'})")
    wall, cpu = measure(lambda: list(build_graphs(events)))
    print(f"GraphBuilder, every graph kept in a list: {wall:,.0f} events/s wall median "
          f"({cpu:,.0f} events/s CPU min; the cyclic collector walks the kept graphs)")
    events.clear()  # (freed before reading the file again: they would slow its collector)
    wall, cpu = measure(from_file)
    print(f"read_trace + every iteration's graph (decoding included): {wall:,.0f} "
          f"events/s wall median ({cpu:,.0f} events/s CPU min)")
    wall, cpu = measure(from_file_nodes)
    print(f"read_trace + every iteration's graph, its nodes looked at (built, and kept): "
          f"{wall:,.0f} events/s wall median ({cpu:,.0f} events/s CPU min)")


def _runtime() -> Any:
    """bench/runtime.py, the debug runtime's own measurements."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import runtime

    return runtime


def debug_vs_record(runtime: Any, script: str, args: list[str], out: str, rounds: int,
                    breakpoints: list[Any]) -> tuple[list[float], list[float]]:
    """Per-round ratios debug / record (wall, child CPU) of ``script``, the two run side by
    side in each round and in alternating order, so a busy neighbour slows both alike.
    Debug is a headless session as ``dyngraph debug`` runs it (values kept) with
    ``breakpoints`` that never hit; record is ``dyngraph record``'s own code."""
    walls, cpus = [], []
    for r in range(rounds):
        costs = {}
        for mode in (("record", "debug") if r % 2 == 0 else ("debug", "record")):
            if mode == "record":
                costs[mode] = runtime.time_record(script, out, args)
            else:
                costs[mode] = runtime.time_session(script, breakpoints, args=args,
                                                   stats="cheap")[0]
        walls.append(costs["debug"][0] / costs["record"][0])
        cpus.append(costs["debug"][1] / costs["record"][1])
    return walls, cpus


def _verdict(ratio: float, goal: float) -> str:
    return f"goal <= {goal}: {'met' if ratio <= goal else 'MISSED'}"


def live(ops: int, rounds: int, steps: int) -> None:
    """The live stream under ``dyngraph debug``'s runtime (bench/runtime.py's measurement):
    ops/s reaching the parent from a tight loop with no breakpoint hit, and a debug
    session against ``dyngraph record`` on a training script, in interleaved rounds."""
    runtime = _runtime()
    with tempfile.TemporaryDirectory() as tmp:
        chain = os.path.join(tmp, "chain.py")
        with open(chain, "w") as f:
            f.write(runtime.CHAIN.format(ops=ops))
        train = os.path.join(tmp, "train.py")
        with open(train, "w") as f:
            f.write(runtime.TRAIN.format(steps=steps))
        out = os.path.join(tmp, "run.dgtrace")
        rates = [runtime.throughput(chain)[0] for _ in range(rounds)]
        walls, cpus = debug_vs_record(runtime, train, [], out, rounds,
                                      runtime.never_hit(train))
    rate = statistics.median(rates)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"\nlive stream: {rate:,.0f} ops/s reach the parent (median of {rounds}; a tight "
          f"loop of {ops:,} small ops, no breakpoint)  (goal >= 100,000: "
          f"{'met' if rate >= 1e5 else 'MISSED'})")
    print(f"dyngraph debug (8 breakpoints that never hit, values kept) vs dyngraph record, "
          f"{steps} training steps, median of {rounds} interleaved rounds: {wall:.2f}x wall "
          f"({_verdict(wall, 1.1)}), {cpu:.2f}x the child's CPU; load average "
          f"{os.getloadavg()[0]:.2f}")


def demos(rounds: int, steps: int | None) -> None:
    """``dyngraph debug`` vs ``dyngraph record`` on every bundled demo that runs here:
    medians of per-round ratios, the two side by side in each round. Each demo runs to its
    end with breakpoints of every kind that never hit it (nan_hunt, whose NaN and gradient
    blow-up are the point, without the NaN and gradient-norm ones)."""
    from dyngraph import demos as bundled

    runtime = _runtime()
    args = [] if steps is None else ["--steps", str(steps)]
    print(f"\ndyngraph debug (values kept) vs dyngraph record on the demos, stats=cheap, "
          f"{'default steps' if steps is None else f'{steps} steps'}, median of {rounds} "
          f"interleaved rounds")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "demo.dgtrace")
        for name in bundled.DEMOS:
            if name in bundled.NEEDS_TORCH:
                continue  # the PyTorch backend's costs are bench/torch_overhead.py's
            script = str(bundled.path(name))
            bps = [bp for bp in runtime.never_hit(script)
                   if name != "nan_hunt" or bp.kind not in ("nan", "grad_norm")]
            walls, cpus = debug_vs_record(runtime, script, args, out, rounds, bps)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            print(f"  {name:<16} {wall:5.2f}x wall ({_verdict(wall, 1.1)}), {cpu:5.2f}x "
                  f"child CPU; load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and events")
    parser.add_argument("--only", default="steps,long,memory,million,live",
                        help="comma-separated parts to run (steps, long, memory, million, "
                             "live, "
                             "demos: not run by default, ~10 min)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    rounds, steps, total = (3, 5, 100_000) if args.quick else (9, 20, 1_000_000)
    print(f"dyngraph {dg.__version__}, numpy {np.__version__}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"ratios: recorded / unrecorded, wall median of {rounds} interleaved rounds of "
          f"{steps} steps (CPU min beside it)")
    warnings.simplefilter("ignore")
    step_modes = ("off", "trace:cheap", "trace:full", "record3:cheap", "record:cheap",
                  "record:full")
    with tempfile.TemporaryDirectory() as tmp:
        if "steps" in parts:
            for name, make, goals in (
                ("MLP 784-256-128-10, batch 64, SGD", mlp_step, {"cheap": 1.15, "full": 1.4}),
                ("attention block (d=64, 4 heads, seq 32, batch 8), SGD", attention_step,
                 {"cheap": 1.1, "full": 1.4}),
            ):
                report_overhead(name, time_modes(make(), rounds, steps, tmp, step_modes),
                                goals)
            report_overhead("1,000 tiny ops (shape (4,)), forward + backward",
                            time_modes(chain_step(), rounds, max(2, steps // 4), tmp,
                                       ("off", "compiled-out", "trace:cheap",
                                        "record3:cheap", "record:cheap")),
                            {"cheap": 2.0})
        if "long" in parts:
            # What "leave it on" means: one recording over many steps, so the trace (kept
            # in memory, or written) grows while the program runs. The collector's cost of
            # a growing trace shows here, not in the short rounds above.
            long_rounds = 2 if args.quick else 3
            for name, make, n, goals in (
                ("MLP step", mlp_step, 500 if args.quick else 3000, {"cheap": 1.15}),
                ("1,000 tiny ops", chain_step, 50 if args.quick else 300, {"cheap": 2.0}),
            ):
                report_overhead(f"long recording, {name} x {n:,} steps in one recording",
                                time_modes(make(), long_rounds, n, tmp,
                                           ("off", "trace:cheap", "record:cheap")), goals)
        if "memory" in parts:
            trace_memory(mlp_step(), 200 if not args.quick else 50, tmp)
        if "million" in parts:
            million(mlp_step(), total, tmp, rounds)
    if "live" in parts:
        live(30_000 if args.quick else 300_000, 3 if args.quick else 5,
             100 if args.quick else 1000)
    if "demos" in parts:
        demos(1 if args.quick else 3, 20 if args.quick else None)
    _ = ev  # the schema is what all of the above measures


if __name__ == "__main__":
    main()
