"""What recording costs: step-time ratios, trace memory, and trace-file speed, in one run.

    OPENBLAS_NUM_THREADS=1 python bench/overhead.py            # everything (~1-2 min)
    OPENBLAS_NUM_THREADS=1 python bench/overhead.py --quick    # smaller, for a smoke run

1. Training-step overhead (an MLP 784-256-128-10 at batch 64 with SGD, and a small
   pre-norm attention block). Every mode is timed (process CPU time) in interleaved rounds
   and each keeps its fastest round, so a busy neighbour on the machine slows all modes
   alike instead of skewing one. Modes: ``off`` (no subscriber: the baseline),
   ``compiled-out`` (apply() and Module.__call__ with the tracer checks removed from their
   source), ``trace:<stats>``
   (``dyngraph.trace`` into memory) and ``record:<stats>`` (``dyngraph.record`` to a file).
2. Memory of a trace: bytes per event of an in-memory trace (stats="cheap", no values) and
   of a trace read back from its file.
3. One million events: write them to a file (peak memory), open with ``read_trace``
   (events/s to a usable Trace), look at the last iteration's graph, and stream them all
   with ``iter_events``. Rates use process CPU time (file reads included) for the same
   reason as above.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import os
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from operator import attrgetter

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


import numpy as np  # noqa: E402

import dyngraph as dg  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402
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
    """Swap in apply() and Module.__call__ without the instrumentation, then restore them."""

    def __enter__(self) -> CompiledOut:
        self.original = tensor_mod.apply
        stripped = _strip_listening(self.original)
        self.patched: list[tuple[object, str, object]] = []
        for name, module in list(sys.modules.items()):
            if name.startswith("dyngraph") and getattr(module, "apply", None) is self.original:
                self.patched.append((module, "apply", self.original))
                module.apply = stripped  # type: ignore[attr-defined]
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
def time_modes(step: Callable[[], None], rounds: int, steps: int, tmp: str) -> dict[str, float]:
    """Fastest per-step time of each mode over interleaved rounds."""

    def run() -> float:
        # CPU time of this process, not wall time: on a machine shared with other jobs, wall
        # time also counts the waits for a core, which have nothing to do with recording.
        t0 = time.process_time()
        for _ in range(steps):
            step()
        return (time.process_time() - t0) / steps

    def traced(stats: str) -> Callable[[], float]:
        def go() -> float:
            with dg.trace(stats=stats):
                return run()
        return go

    def recorded(stats: str) -> Callable[[], float]:
        def go() -> float:
            with dg.record(os.path.join(tmp, "bench.dgtrace"), stats=stats):
                return run()
        return go

    def compiled_out() -> float:
        with CompiledOut():
            return run()

    modes: dict[str, Callable[[], float]] = {
        "off": run, "compiled-out": compiled_out,
        "trace:none": traced("none"), "trace:cheap": traced("cheap"),
        "trace:full": traced("full"), "record:cheap": recorded("cheap"),
        "record:full": recorded("full"),
    }
    for _ in range(3):
        step()
    best = {name: float("inf") for name in modes}
    for _ in range(rounds):
        for name, go in modes.items():
            gc.collect()
            best[name] = min(best[name], go())
    return best


def report_overhead(name: str, best: dict[str, float]) -> None:
    base = best["off"]
    print(f"\n{name}: unrecorded step {base * 1e3:.3f} ms")
    print(f"  no subscriber vs compiled out   {base / best['compiled-out']:.3f}x  (goal <= 1.03)")
    goals = {"trace:cheap": 1.3, "trace:full": 1.6}
    for mode in ("trace:none", "trace:cheap", "trace:full", "record:cheap", "record:full"):
        ratio = best[mode] / base
        goal = goals.get(mode)
        if mode.startswith("record:"):
            extra = ratio - best["trace:" + mode.split(":")[1]] / base
            goal_text = f"(file adds {extra:+.3f}x, goal <= +0.1)"
        else:
            goal_text = f"(goal <= {goal})" if goal else ""
        print(f"  {mode:<14} {ratio:6.3f}x  {goal_text}")


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
def million(step: Callable[[], None], total: int, tmp: str) -> None:
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
    os.remove(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and events")
    args = parser.parse_args()
    rounds, steps, total = (4, 10, 100_000) if args.quick else (12, 25, 1_000_000)
    print(f"dyngraph {dg.__version__}, numpy {np.__version__}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("MLP 784-256-128-10, batch 64, SGD", mlp_step),
                           ("attention block (d=64, 4 heads, seq 32, batch 8), SGD",
                            attention_step)):
            report_overhead(name, time_modes(make(), rounds, steps, tmp))
        trace_memory(mlp_step(), 200 if not args.quick else 50, tmp)
        million(mlp_step(), total, tmp)
    _ = ev  # the schema is what all of the above measures


if __name__ == "__main__":
    main()
