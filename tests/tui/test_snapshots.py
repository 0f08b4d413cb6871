"""Snapshot tests of the debugger's screens (pytest-textual-snapshot; SVGs in __snapshots__).

The app replays a trace recorded in a fresh interpreter, so tensor ids are stable; every
snapshot waits for the graph layout and the gradient-norm history before the screenshot.
Update after an intended change with ``pytest tests/tui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from conftest import wait_for
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.inspector import Inspector
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource
from textual.app import App, ComposeResult
from textual.widgets import Input

import dyngraph
from dyngraph.debug import Breakpoint

pytest.importorskip("pytest_textual_snapshot")
SIZE = (160, 45)


def replay_app(path) -> DebuggerApp:
    return DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))


async def settle(pilot) -> None:
    """Wait for the layout worker and the norms thread; stop cursors blinking."""
    app = pilot.app
    canvas = app.query_one("#graph")
    await wait_for(pilot, lambda: not getattr(canvas, "status", ""), timeout=30)
    await wait_for(pilot, lambda: all(app.model.has_norms(i.index)
                                      for i in app.model.iterations if i.complete), timeout=10)
    for field in app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


def test_main_screen(snap_compare, nan_trace_path):
    async def run_before(pilot) -> None:
        await pilot.press("f")  # the whole forward graph of iteration 1, backward next
        await settle(pilot)

    assert snap_compare(replay_app(nan_trace_path), terminal_size=SIZE, run_before=run_before)


def test_breakpoints_dialog(snap_compare, nan_trace_path):
    app = replay_app(nan_trace_path)
    app.source.add_breakpoint(Breakpoint.nan())
    app.source.add_breakpoint(Breakpoint.op("matmul", "max > 10"))

    async def run_before(pilot) -> None:
        await pilot.press("f")  # as the main screen's snapshot: a settled screen behind
        await settle(pilot)
        await pilot.press("B")
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class InspectorApp(App):
    """The inspector alone, on the node ``pick`` chooses from iteration ``index``."""

    def __init__(self, path, index: int, pick) -> None:
        super().__init__()
        self.model = Model()
        self.model.ingest(dyngraph.read_trace(path).events)
        for info in self.model.iterations:
            self.model.iteration_norms(info.index)
        self.index, self.pick = index, pick

    def compose(self) -> ComposeResult:
        yield Inspector(id="inspector")

    def on_mount(self) -> None:
        graph = self.model.graph(self.index)
        node = next(n for n in graph.nodes.values() if self.pick(n))
        inputs = [f"{graph.nodes[i].label} t{i}" for i in graph.inputs_of(node.id)]
        self.query_one(Inspector).show(node, self.model.grad_history(node), inputs)


def test_inspector_on_a_parameter(snap_compare, nan_trace_path):
    # a parameter after backward in iteration 1, with its gradient-norm sparkline
    app = InspectorApp(nan_trace_path, 1, lambda n: n.kind == "leaf" and n.grad is not None)
    assert snap_compare(app, terminal_size=(90, 20))


def test_inspector_on_a_nan_op(snap_compare, nan_trace_path):
    app = InspectorApp(nan_trace_path, 2, lambda n: n.op == "log")
    assert snap_compare(app, terminal_size=(90, 20))


def test_first_screen_of_a_live_run(snap_compare):
    """pdb's first screen: the script's source, its first statement marked, focused."""
    from conftest import TINY, paused
    from dyngraph.tui.sources import LiveSource

    app = DebuggerApp(LiveSource.start(Model(), str(TINY)))

    async def run_before(pilot) -> None:
        await wait_for(pilot, paused(app, "start"))
        await wait_for(pilot, lambda: app.query_one("#source").line > 0)
        await settle(pilot)

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    finally:
        app.source.close()


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
def test_small_terminal(snap_compare, nan_trace_path, size):
    """Stopped at the NaN: panes make room, the status line's description wraps whole."""
    async def run_before(pilot) -> None:
        await pilot.press("x", "c")
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(replay_app(nan_trace_path), terminal_size=size, run_before=run_before)


def test_help_screen(snap_compare, nan_trace_path):
    async def run_before(pilot) -> None:
        await pilot.press("f")  # as the main screen's snapshot: a settled screen behind
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(replay_app(nan_trace_path), terminal_size=SIZE, run_before=run_before)
