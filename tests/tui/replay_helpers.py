"""Helpers of the tests that open a recorded big model as ``dyngraph view`` does (the
trace decoded in chunks on a thread): the first picture and keys pressed while loading."""

from __future__ import annotations

import time

from canvas_helpers import _GPT
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.graph_canvas import GraphCanvas
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource

import dyngraph


def record_gpt(path, layers: int, iterations: int = 1) -> None:
    """A trace of ``iterations`` steps of a GPT of ``layers`` blocks (cheap statistics)."""
    dyngraph.manual_seed(0)
    model = _GPT(layers)
    with dyngraph.record(path, stats="cheap"):
        for _ in range(iterations):
            model(dyngraph.tensor([[1, 2, 3]])).backward()


async def wait_for(pilot, cond, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        await pilot.pause(0.02)
    assert cond()


def open_app(path, layout=None) -> DebuggerApp:
    """The debugger replaying ``path``, its graph pane laid out by ``layout`` (a stand-in
    such as canvas_helpers.Counting) from its first layout job on."""
    app = DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))
    if layout is None:
        return app
    original = app.on_mount

    def on_mount() -> None:  # the stand-in layout before the first layout job
        canvas = app.query_one(GraphCanvas)
        canvas._layout_fn = layout
        original()
        if canvas._worker is not None:
            canvas._worker.layout_fn = layout

    app.on_mount = on_mount  # type: ignore[method-assign]
    return app
