"""Graph canvas speed: layout, rasterisation and per-step redraw on 1k and 5k node graphs.

    OPENBLAS_NUM_THREADS=1 python bench/tui_canvas.py [--sizes 1000,5000]

The graphs come from a real dyngraph model (residual MLP blocks in nested modules), so the
layouts have the clusters, parameters and skip edges of a real run. ``step_redraw()`` is
importable by bench/tui.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import dyngraph  # noqa: E402
from dyngraph import nn  # noqa: E402
from dyngraph.capture.graph import Graph, build_graphs  # noqa: E402


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(dyngraph.relu(self.fc1(x))).tanh()


class Stack(nn.Module):
    def __init__(self, depth: int, width: int = 8) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(width) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def model_graph(nodes: int) -> Graph:
    """One iteration (forward + backward) of a model with about ``nodes`` graph nodes."""
    probe = _trace(Stack(4))
    per_block = (len(probe.nodes) - 3) / 4
    model = Stack(max(1, round((nodes - 3) / per_block)))
    return _trace(model)


def _trace(model: nn.Module) -> Graph:
    events = []
    x = dyngraph.tensor(np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32))
    with dyngraph.subscribe(events.append, stats="cheap"):
        model(x).sum().backward()
        dyngraph.capture.tracing.tracer.flush_iteration()
    return next(build_graphs(events))


def rnn_graph(steps: int, share: int | None = None) -> Graph:
    """A hand-written RNN loop ``h = (x @ U + h @ W).tanh()``: x feeds every step, and U, W
    too (or a fresh U, W pair every ``share`` steps)."""
    rng = np.random.default_rng(0)
    x = dyngraph.tensor(rng.standard_normal((4, 8), dtype=np.float32))
    events = []
    with dyngraph.subscribe(events.append, stats="cheap"):
        h = dyngraph.zeros(4, 8)
        for t in range(steps):
            if t % (share or steps) == 0:
                U = nn.Parameter(dyngraph.tensor(rng.standard_normal((8, 8), dtype=np.float32)))
                W = nn.Parameter(dyngraph.tensor(rng.standard_normal((8, 8), dtype=np.float32)))
            h = (x @ U + h @ W).tanh()
        h.sum().backward()
        dyngraph.capture.tracing.tracer.flush_iteration()
    return next(build_graphs(events))


def shared_leaves(steps_list: list[int]) -> None:
    """Layout time of an RNN loop with and without a copy of each shared leaf per use."""
    from dyngraph.tui import canvas_layout as cl

    for steps in steps_list:
        canon = cl.Canonical()
        canon.update(rnn_graph(steps))
        times = {}
        for copies in (False, True):
            rule = cl.Collapse(None)
            entry = cl.compute_entry(canon.sigs, rule, False, cl.default_layout,
                                     copy_shared=None if copies else 0)
            times[copies] = (entry.layout_seconds, len(entry.scene.boxes))
        (before, nb), (after, na) = times[False], times[True]
        print(f"RNN loop {steps:>3} steps, {len(canon.sigs):>4} nodes: one box per shared leaf "
              f"{before:6.2f} s ({nb} boxes), a copy per use {after:6.2f} s ({na} boxes): "
              f"{before / max(after, 1e-9):6.1f}x faster")


def copy_threshold(steps: int = 60) -> None:
    """Which leaves are worth copying: weights shared by k steps, copied from 2 uses or not.

    x (used by every step) is copied in both columns, so the difference is the weights'.
    """
    from dyngraph.tui import canvas_layout as cl

    for share in (2, 5, 20):
        canon = cl.Canonical()
        canon.update(rnn_graph(steps, share))
        t = [cl.compute_entry(canon.sigs, cl.Collapse(None), False, cl.default_layout,
                              copy_shared=least).layout_seconds for least in (2, share + 1)]
        print(f"RNN loop {steps} steps, U and W shared by {share:>2} steps: copying from 2 "
              f"uses {t[0]:6.3f} s, weights not copied {t[1]:6.3f} s ({t[1] / t[0]:4.1f}x)")


def prefix(graph: Graph, n: int) -> Graph:
    """The graph as it stood after its first ``n`` nodes (what replay shows mid-iteration)."""
    out = Graph(iteration=graph.iteration)
    keep = sorted(graph.nodes.values(), key=lambda nd: nd.seq)[:n]
    out.nodes = {nd.id: nd for nd in keep}
    out.edges = [e for e in graph.edges if e.src in out.nodes and e.dst in out.nodes]
    return out


def layout_and_raster(graph: Graph, *, auto: bool) -> dict[str, float]:
    from dyngraph.tui import canvas_layout as cl

    canon = cl.Canonical()
    canon.update(graph)
    rule = cl.Collapse(cl.auto_depth(canon.sigs) if auto else None)
    t0 = time.perf_counter()
    entry = cl.compute_entry(canon.sigs, rule, False, cl.default_layout)
    total = time.perf_counter() - t0
    return {"nodes": len(graph), "boxes": len(entry.scene.boxes), "layout": entry.layout_seconds,
            "raster": entry.raster_seconds, "total": total,
            "rows": entry.scene.height, "cols": entry.scene.width}


async def _step_redraw(graph: Graph, steps: int, new_objects: bool) -> tuple[float, float]:
    from dyngraph.tui.graph_canvas import GraphCanvas
    from textual.app import App

    class Host(App):
        def compose(self):
            yield GraphCanvas(id="graph", auto_collapse=False)  # the worst case: 5k boxes

    app = Host()
    order = sorted(graph.nodes.values(), key=lambda nd: nd.seq)
    async with app.run_test(size=(160, 50)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph, current=order[0].id)
        while canvas.status or canvas.scene is None:  # wait for the one layout
            await pilot.pause(0.05)
        start = len(order) // 2
        shows, frames = [], []
        for k in range(start, start + steps):
            shown = prefix(graph, k + 1) if new_objects else graph
            t0 = time.perf_counter()
            canvas.show(shown, current=order[k].id)
            t1 = time.perf_counter()
            for y in range(canvas.size.height):  # what a refresh of the pane renders
                canvas.render_line(y)
            t2 = time.perf_counter()
            shows.append(t1 - t0)
            frames.append(t2 - t0)
        assert not canvas.status, canvas.status  # the cached layout covered every step
        # End to end through Textual: show(), then let the app repaint the screen.
        screen = []
        for k in range(start, start + steps):
            shown = prefix(graph, k + 1) if new_objects else graph
            t0 = time.perf_counter()
            canvas.show(shown, current=order[k].id)
            await pilot.pause(0)
            screen.append(time.perf_counter() - t0)
        idle = []
        for _ in range(steps):  # what a repaint with nothing to do costs in the harness
            t0 = time.perf_counter()
            canvas.refresh()
            await pilot.pause(0)
            idle.append(time.perf_counter() - t0)
    return (statistics.median(shows), statistics.median(frames), statistics.median(screen),
            statistics.median(idle))


def step_redraw(graph: Graph, steps: int = 20, new_objects: bool = False) -> dict[str, float]:
    """Median seconds for one step on ``graph`` with its layout cached.

    ``show``: canvas.show(); ``frame``: show() + rendering every visible row; ``screen``:
    show() + a full repaint through Textual (headless); ``idle``: a repaint with no change.
    ``new_objects`` hands the canvas a fresh Graph each step (replay rebuilding the graph so
    far) instead of the same object with a new current op.
    """
    show, frame, screen, idle = asyncio.run(_step_redraw(graph, steps, new_objects))
    return {"show": show, "frame": frame, "screen": screen, "idle": idle}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000")
    parser.add_argument("--rnn-steps", default="20,40,60",
                        help="RNN loop lengths for the shared-leaf comparison ('' skips it)")
    args = parser.parse_args()
    if args.rnn_steps:
        shared_leaves([int(s) for s in args.rnn_steps.split(",")])
        copy_threshold()
    for size in (int(s) for s in args.sizes.split(",") if s):
        graph = model_graph(size)
        for auto in (False, True):
            r = layout_and_raster(graph, auto=auto)
            print(f"{r['nodes']:>5} nodes {'auto-collapsed' if auto else 'expanded      '} "
                  f"{r['boxes']:>5} boxes  layout {r['layout']:6.2f} s  raster {r['raster']:6.3f}"
                  f" s  grid {r['cols']}x{r['rows']}")
        for fresh in (False, True):
            r = step_redraw(graph, new_objects=fresh)
            what = "fresh Graph per step" if fresh else "same Graph object  "
            print(f"{len(graph):>5} nodes step, layout cached, {what}: show {r['show'] * 1e3:5.1f}"
                  f" ms, show+rows {r['frame'] * 1e3:5.1f} ms, show+repaint "
                  f"{r['screen'] * 1e3:5.1f} ms (bare repaint {r['idle'] * 1e3:4.1f} ms); "
                  "target < 50 ms")


if __name__ == "__main__":
    main()
