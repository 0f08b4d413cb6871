"""The debugger's speed, measured in one run.

    OPENBLAS_NUM_THREADS=1 python bench/tui.py [--quick]

1. Open: a recorded trace of 200,000 events opens interactive in ``dyngraph view`` in
   < 1.5 s. Measured headless in-process (read_trace + app start until the first full
   redraw) and, where tmux exists, as a user sees it: ``dyngraph view`` in a real terminal
   until the status line shows PAUSED.
2. Step: a step key redraws in < 50 ms on a 5,000-node graph whose layout is cached; the
   same on the 1,939-node shared-weight residual loop (8 Linear+Tanh blocks of a ModuleList
   applied 60 times at top level), whose first picture is due within 3 s of the key.
   Handler time (the key's action: model + every pane) and key-to-idle time (Pilot.press:
   action, the canvas's work and the screen update).
3. Live: while a session streams 50,000 ops/s, key latency stays < 100 ms (time from the
   key being queued to its action running). The stream comes from a stand-in session that
   releases pre-recorded engine events at exactly that rate (the real child's rate is
   bounded by the engine; it is reported too, from ``dyngraph.debug.Session``).
5. Big models (``bench/tui_big.py``, ``--only big``): a 72-layer GPT and a 50,000-node
   model open folded by module: first picture < 1.5 s, opening or folding one module
   < 200 ms, a step < 50 ms, and no layout over more boxes than the pane shows.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import atexit  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from dyngraph.tui.app import DebuggerApp  # noqa: E402
from dyngraph.tui.model import Model  # noqa: E402
from dyngraph.tui.sources import LiveSource, ReplaySource, SourceState  # noqa: E402
from tui_big import bench_big  # noqa: E402  (bench/ is on sys.path: run as a script)

import dyngraph  # noqa: E402
from dyngraph.capture import events as ev  # noqa: E402

SIZE = (200, 50)
# The graph pane lays out on daemon threads; a layout still running at exit (a big RNN
# graph takes minutes) would outlive us. End this process's children on the way out.
atexit.register(lambda: __import__("dyngraph.tui.cli", fromlist=["x"]).end_children())


# -- workloads ----------------------------------------------------------------------------
def rnn_steps(steps: int, length: int, hidden: int = 8) -> None:
    """A tanh RNN unrolled ``length`` steps, ``steps`` iterations: ~4 ops per step."""
    rng = np.random.default_rng(0)
    w = dyngraph.tensor(rng.normal(0, 0.3, (hidden, hidden)).astype(np.float32),
                        requires_grad=True)
    u = dyngraph.tensor(rng.normal(0, 0.3, (4, hidden)).astype(np.float32), requires_grad=True)
    xs = dyngraph.tensor(rng.normal(0, 1, (length, 2, 4)).astype(np.float32))
    for _ in range(steps):
        h = dyngraph.zeros(2, hidden)
        for t in range(length):
            h = (h @ w + xs[t] @ u).tanh()
        loss = (h * h).mean()
        loss.backward()
        w.grad = None
        u.grad = None


def record_trace(path: Path, steps: int, length: int, stats: str = "cheap") -> int:
    with dyngraph.record(path, stats=stats):
        rnn_steps(steps, length)
    return len(dyngraph.read_trace(path).events)


def deep_chain_events(layers: int, width: int = 4) -> list[ev.Event]:
    """Two identical iterations of a ``layers``-deep chain, distinct leaves per layer:
    5 nodes a layer (matmul, add, tanh and two parameters)."""
    rng = np.random.default_rng(0)
    ws = [dyngraph.tensor(rng.normal(0, 0.3, (width, width)).astype(np.float32),
                          requires_grad=True) for _ in range(layers)]
    bs = [dyngraph.tensor(np.zeros(width, np.float32), requires_grad=True)
          for _ in range(layers)]
    with dyngraph.trace(stats="cheap") as t:
        for _ in range(2):
            h = dyngraph.ones(2, width)
            for w, b in zip(ws, bs, strict=True):
                h = (h @ w + b).tanh()
            h.sum().backward()
    return list(t.events)


def shared_loop_events(reps: int = 60, iterations: int = 2) -> list[ev.Event]:
    """The residual loop of issue 12: one iteration of 1,939 nodes, every weight shared."""
    import dyngraph.nn as nn

    dyngraph.manual_seed(0)
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(8)])
    with dyngraph.trace() as t:
        for _ in range(iterations):
            h = dyngraph.randn(4, 16)
            for _ in range(reps):
                for block in blocks:
                    h = h + 0.1 * block(h)
            h.pow(2).mean().backward()
    return list(t.events)


def in_memory_events(steps: int, length: int) -> list[ev.Event]:
    with dyngraph.trace(stats="cheap") as t:
        rnn_steps(steps, length)
    return list(t.events)


# -- helpers --------------------------------------------------------------------------------
async def wait_until(pilot, condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await pilot.pause(0.02)
    return False


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


# -- 1. open a 200k-event trace --------------------------------------------------------------
def bench_open(path: Path, n_events: int) -> dict[str, float]:
    t0 = time.perf_counter()
    trace = dyngraph.read_trace(path)
    t_read = time.perf_counter() - t0
    model = Model()
    t1 = time.perf_counter()
    model.ingest(trace.events)
    t_ingest = time.perf_counter() - t1
    out = {"read_trace (lazy)": t_read, "decode every event + model.ingest": t_ingest}

    async def run() -> None:
        start = time.perf_counter()
        app = DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))
        shown: list[float] = []
        done: list[float] = []
        display, step = app._display, app.action_step_op

        def displayed(screen, renderable) -> None:
            display(screen, renderable)
            shown.append(time.perf_counter())

        def stepped() -> None:
            step()
            done.append(time.perf_counter())

        app._display = displayed  # type: ignore[method-assign]
        app.action_step_op = stepped  # type: ignore[method-assign]
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.redraws >= 1 and shown and shown[-1] > start)
            await wait_until(pilot, lambda: "PAUSED" in str(app.query_one("#status").render()))
            out["open: first screen (read_trace + app + draw)"] = shown[-1] - start
            latencies = []
            while app.source.loading and len(latencies) < 20:
                t0 = time.perf_counter()
                before = len(done)
                app.post_message(_key("n"))
                await wait_until(pilot, lambda b=before: len(done) > b and shown[-1] > done[-1],
                                 10)
                latencies.append(shown[-1] - t0)
                await pilot.pause(0.1)
            if latencies:
                out["step key while the rest loads, median"] = statistics.median(latencies)
                out["step key while the rest loads, max"] = max(latencies)
            await wait_until(pilot, lambda: not app.source.loading, 600)
            out["whole trace loaded (background thread)"] = time.perf_counter() - start

    asyncio.run(run())
    if shutil.which("tmux"):
        out["tmux: dyngraph view until PAUSED on screen"] = open_in_tmux(path)
    print(f"\n1. open a trace of {n_events:,} events (goal < 1.5 s)")
    for k, v in out.items():
        print(f"   {k:<46} {ms(v)}")
    return out


def open_in_tmux(path: Path) -> float:
    name = f"dyngraph-bench-{os.getpid()}"
    cmd = f"{sys.executable} -m dyngraph view {path}; sleep 5"
    start = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "50", cmd],
                   check=True, timeout=10)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = subprocess.run(["tmux", "capture-pane", "-t", name, "-p"],
                                    capture_output=True, text=True, timeout=5).stdout
            if "PAUSED" in screen:
                return time.perf_counter() - start
            time.sleep(0.01)
        return float("nan")
    finally:
        subprocess.run(["tmux", "send-keys", "-t", name, "q"], timeout=5)
        time.sleep(0.3)
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=5)


# -- 2. step on a 5,000-node graph -----------------------------------------------------------
def bench_step(events: list[ev.Event], repeats: int) -> dict[str, float]:
    out: dict[str, float] = {}

    class Trace:
        pass

    trace = Trace()
    trace.events = events  # type: ignore[attr-defined]

    async def run() -> None:
        app = DebuggerApp(ReplaySource(Model(), trace))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("right_square_bracket")  # the end of iteration 2
            nodes = len(app.graph.nodes)
            canvas = app.query_one("#graph")
            t = time.perf_counter()
            ok = await wait_until(pilot, lambda: not getattr(canvas, "status", ""), 120)
            out["layout of the iteration (worker, once)"] = time.perf_counter() - t
            if not ok:
                print("   layout did not finish:", canvas.status)
            await pilot.press("f")  # backward start: the whole forward graph, layout cached
            await wait_until(pilot, lambda: not getattr(canvas, "status", ""), 120)
            out["nodes"] = nodes
            handler: list[float] = []
            press: list[float] = []
            done: list[float] = []
            shown: list[float] = []
            original, display = app.refresh_view, app._display

            def timed() -> None:
                t0 = time.perf_counter()
                original()
                done.append(time.perf_counter())
                handler.append(done[-1] - t0)

            def displayed(screen, renderable) -> None:
                display(screen, renderable)
                shown.append(time.perf_counter())

            app.refresh_view = timed  # type: ignore[method-assign]
            app._display = displayed  # type: ignore[method-assign]
            for key in ["left"] * repeats + ["right"] * repeats + ["n"] * repeats:
                await pilot.pause(0.05)
                n = len(done)
                t0 = time.perf_counter()
                app.post_message(_key(key))
                while time.perf_counter() - t0 < 5 and not (
                        len(done) > n and shown and shown[-1] > done[-1]):
                    await asyncio.sleep(0.0005)
                press.append(shown[-1] - t0)
            out["handler median (model + all panes)"] = statistics.median(handler)
            out["handler max"] = max(handler)
            out["key to screen updated, median"] = statistics.median(press)
            out["key to screen updated, max"] = max(press)
            t0 = time.perf_counter()
            app.save_screenshot(str(Path(tempfile.gettempdir()) / "dyngraph-bench-5k.svg"))
            out["full-screen render (screenshot)"] = time.perf_counter() - t0

    asyncio.run(run())
    print(f"\n2. step keys on a {int(out.get('nodes', 0)):,}-node graph, layout cached "
          "(goal < 50 ms)")
    for k, v in out.items():
        if k != "nodes":
            print(f"   {k:<46} {ms(v)}")
    return out


def bench_huge(events: list[ev.Event], repeats: int) -> dict[str, float]:
    """A 10,000-node iteration stays usable: key latency before its layout arrives."""
    out: dict[str, float] = {}

    class Trace:
        pass

    trace = Trace()
    trace.events = events  # type: ignore[attr-defined]

    async def run() -> None:
        app = DebuggerApp(ReplaySource(Model(), trace))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            t0 = time.perf_counter()
            await pilot.press("right_square_bracket")
            out["jump to the 10k-node iteration (Pilot.press)"] = time.perf_counter() - t0
            out["nodes"] = len(app.graph.nodes)
            done: list[float] = []
            shown: list[float] = []
            original, display = app.refresh_view, app._display

            def timed() -> None:
                original()
                done.append(time.perf_counter())

            def displayed(screen, renderable) -> None:
                display(screen, renderable)
                shown.append(time.perf_counter())

            app.refresh_view = timed  # type: ignore[method-assign]
            app._display = displayed  # type: ignore[method-assign]
            press = []
            for key in ["left"] * repeats + ["right"] * repeats:
                await pilot.pause(0.05)
                n = len(done)
                t0 = time.perf_counter()
                app.post_message(_key(key))
                while time.perf_counter() - t0 < 10 and not (
                        len(done) > n and shown and shown[-1] > done[-1]):
                    await asyncio.sleep(0.0005)
                press.append(shown[-1] - t0)
            out["key to screen, median (layout pending)"] = statistics.median(press)
            out["key to screen, max"] = max(press)
            said.append(getattr(app.query_one("#graph"), "status", "")[:80])

    said: list[str] = []
    asyncio.run(run())
    print(f"\n2b. a {int(out['nodes']):,}-node iteration stays usable")
    for k, v in out.items():
        if k != "nodes":
            print(f"   {k:<46} {ms(v)}")
    print(f"   the graph pane meanwhile says: {said[0]!r}")
    return out


def bench_timeline(rows: int, repeats: int) -> dict[str, float]:
    """The timeline alone with ``rows`` rows: page and jump keys, key to screen."""
    from dyngraph.tui.timeline import Timeline
    from textual.app import App, ComposeResult

    events: list[ev.Event] = [
        ev.Op(seq=i, iteration=1, op="matmul" if i % 3 else "tanh", shape=(64, 64),
              module="encoder.layers.3", file="/home/me/train.py", line=40 + i % 7)
        for i in range(rows)
    ]
    out: dict[str, float] = {}

    class TimelineApp(App):
        def compose(self) -> ComposeResult:
            yield Timeline(id="timeline")

    async def run() -> None:
        app = TimelineApp()
        async with app.run_test(size=SIZE) as pilot:
            timeline = app.query_one(Timeline)
            t0 = time.perf_counter()
            timeline.show(events, list(range(rows)), rows // 2)
            timeline.focus()
            await pilot.pause()
            out["show 100k rows and draw"] = time.perf_counter() - t0
            shown: list[float] = []
            display = app._display

            def displayed(screen, renderable) -> None:
                display(screen, renderable)
                shown.append(time.perf_counter())

            app._display = displayed  # type: ignore[method-assign]
            press = []
            for key in ["pagedown", "pageup", "down", "end", "home"] * repeats:
                await pilot.pause(0.03)
                n = len(shown)
                t0 = time.perf_counter()
                app.post_message(_key(key))
                while len(shown) == n and time.perf_counter() - t0 < 5:
                    await asyncio.sleep(0.0005)
                press.append(shown[-1] - t0)
            out["scroll key to screen, median"] = statistics.median(press)
            out["scroll key to screen, max"] = max(press)

    asyncio.run(run())
    print(f"\n2c. the timeline with {rows:,} rows (virtualised)")
    for k, v in out.items():
        print(f"   {k:<46} {ms(v)}")
    return out


# -- 3. key latency while streaming ------------------------------------------------------------
class StreamingSession:
    """Stands in for ``dyngraph.debug.Session``: releases recorded events at ``rate`` ops/s."""

    def __init__(self, events: list[ev.Event], rate: float) -> None:
        self.events = events
        self.ops_before = np.cumsum([isinstance(e, ev.Op) for e in events])
        self.rate = rate
        self.start = time.perf_counter()
        self.sent = 0

    @property
    def state(self) -> SourceState:
        return SourceState("running", "", "")

    def poll(self, timeout: float = 0.0) -> list[ev.Event]:
        due_ops = (time.perf_counter() - self.start) * self.rate
        end = int(np.searchsorted(self.ops_before, due_ops, side="right"))
        batch, self.sent = self.events[self.sent:end], max(self.sent, end)
        return batch

    def close(self) -> None:
        pass


def bench_live(events: list[ev.Event], rate: float, seconds: float) -> dict[str, float]:
    out: dict[str, float] = {}

    async def run() -> None:
        session = StreamingSession(events, rate)
        app = DebuggerApp(LiveSource(Model(), session))
        latencies: list[float] = []
        ran: list[float] = []
        original = app.action_toggle_output

        def marked() -> None:
            ran.append(time.perf_counter())
            original()

        app.action_toggle_output = marked  # type: ignore[method-assign]
        async with app.run_test(size=SIZE):
            session.start = time.perf_counter()
            end = session.start + seconds
            while time.perf_counter() < end:
                await asyncio.sleep(0.1)
                t0 = time.perf_counter()
                n = len(ran)
                app.post_message(_key("o"))
                while len(ran) == n and time.perf_counter() - t0 < 5:
                    await asyncio.sleep(0.001)
                if len(ran) > n:
                    latencies.append(ran[-1] - t0)
            elapsed = time.perf_counter() - session.start
            ops = int(session.ops_before[session.sent - 1]) if session.sent else 0
            out["ops streamed per second"] = ops / elapsed
            out["events ingested by the UI"] = len(app.model.events)
            out["key latency median"] = statistics.median(latencies)
            out["key latency p95"] = sorted(latencies)[int(0.95 * (len(latencies) - 1))]
            out["key latency max"] = max(latencies)
            out["keys"] = len(latencies)

    asyncio.run(run())
    print(f"\n3. key latency while streaming {rate:,.0f} ops/s for {seconds:g} s "
          "(goal < 100 ms)")
    print(f"   {'ops streamed per second':<46} {out['ops streamed per second']:10,.0f}")
    print(f"   {'events ingested by the UI':<46} {out['events ingested by the UI']:10,.0f}")
    for k in ("key latency median", "key latency p95", "key latency max"):
        print(f"   {k:<46} {ms(out[k])}")
    return out


def _key(key: str):
    from textual import events

    return events.Key(key, None)


def real_child_rate(seconds: float = 3.0) -> float:
    """Ops per second the real debug child streams on a tight loop (stats cheap)."""
    from dyngraph.debug import Session

    script = Path(tempfile.mkdtemp()) / "loop.py"
    script.write_text(
        "import dyngraph as torch\n"
        "x = torch.ones(4, requires_grad=True)\n"
        "while True:\n"
        "    y = x\n"
        "    for _ in range(100):\n"
        "        y = y * 1.0001\n"
        "    y.sum().backward()\n"
        "    x.grad = None\n")
    session = Session.start(script, stats="cheap", pause_at_start=False)
    try:
        ops = 0
        time.sleep(0.5)
        session.poll()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            ops += sum(1 for e in session.poll(0.05) if type(e) is ev.Op)
        return ops / (time.perf_counter() - t0)
    finally:
        session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test)")
    parser.add_argument("--only", choices=["big"], help="run one part only: big models (5.)")
    parser.add_argument("--gpt-trace", help="a recorded 72-layer nanoGPT trace for part 5")
    parser.add_argument("--baseline", metavar="REV", help="part 5's first picture also with "
                        "git revision REV's dyngraph, in interleaved rounds")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved rounds of part 5's first picture (default 5)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    tmp = Path(tempfile.mkdtemp(prefix="dyngraph-bench-"))
    if args.only == "big":
        bench_big(tmp, 3 if args.quick else 7, args.gpt_trace, args.baseline, args.rounds)
        shutil.rmtree(tmp, ignore_errors=True)
        return

    path = tmp / "big.dgtrace"
    t = time.perf_counter()
    n = record_trace(path, steps=max(100 // scale, 2), length=250)
    print(f"recorded {n:,} events in {time.perf_counter() - t:.1f} s "
          f"({path.stat().st_size / 1e6:.1f} MB)")
    bench_open(path, n)

    big = deep_chain_events(layers=max(1000 // scale, 20))
    bench_step(big, repeats=5 if args.quick else 15)
    bench_step(shared_loop_events(reps=max(60 // scale, 2)), repeats=5 if args.quick else 15)

    bench_huge(deep_chain_events(layers=max(2000 // scale, 20)), repeats=5)
    bench_timeline(100_000, repeats=4)

    stream = in_memory_events(steps=max(300 // scale, 3), length=250)
    bench_live(stream, rate=50_000, seconds=2.0 if args.quick else 5.0)
    try:
        print(f"\n   real debug child, tight loop: {real_child_rate():10,.0f} ops/s streamed")
    except Exception as exc:  # the runtime may be missing in a partial checkout
        print(f"\n   real debug child: not measured ({exc})")
    bench_big(tmp, 3 if args.quick else 7, args.gpt_trace, args.baseline, args.rounds)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
