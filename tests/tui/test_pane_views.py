"""Snapshots of the graph pane on a graph bigger than the pane: gradient colours with
their legend, the whole-graph overview (``W``), and ``.`` centring the selection."""

from __future__ import annotations

import time

import pytest
from dyngraph.tui.graph_canvas import GraphCanvas
from textual.app import App, ComposeResult

import dyngraph
import dyngraph.nn as nn

pytest.importorskip("pytest_textual_snapshot")
SIZE = (100, 30)


def looped_graph() -> dyngraph.capture.graph.Graph:
    """A residual loop over a ModuleList (about 100 nodes), after backward."""
    dyngraph.manual_seed(0)
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(3)])
    with dyngraph.trace() as t:
        h = dyngraph.randn(2, 4)
        for _ in range(4):
            for block in blocks:
                h = h + block(h) * 3.0
        h.pow(2).mean().backward()
    return t.iterations[0].graph


class Pane(App):
    def compose(self) -> ComposeResult:
        yield GraphCanvas(id="graph", min_interval=0)  # Graphviz: deterministic

    def on_mount(self) -> None:
        canvas = self.query_one(GraphCanvas)
        graph = looped_graph()
        canvas.show(graph, current=max(graph.nodes))
        canvas.focus()


async def drawn(pilot) -> GraphCanvas:
    canvas = pilot.app.query_one(GraphCanvas)
    deadline = time.monotonic() + 10
    while (canvas.scene is None or canvas.status) and time.monotonic() < deadline:
        await pilot.pause(0.02)
    await pilot.pause()
    return canvas


def test_gradient_colours_and_legend(snap_compare):
    async def run_before(pilot) -> None:
        canvas = await drawn(pilot)
        assert canvas.legend() and canvas.info.startswith("‖grad‖ 1e")

    assert snap_compare(Pane(), terminal_size=SIZE, run_before=run_before)


def test_whole_graph_overview(snap_compare):
    async def run_before(pilot) -> None:
        await drawn(pilot)
        await pilot.press("W")
        await pilot.pause()

    assert snap_compare(Pane(), terminal_size=SIZE, run_before=run_before)


async def test_overview_shows_every_box_and_W_goes_back():
    app = Pane()
    async with app.run_test(size=SIZE) as pilot:
        canvas = await drawn(pilot)
        assert canvas.scene.height > SIZE[1]  # bigger than the pane
        await pilot.press("W")
        assert canvas.overview
        height = canvas.scrollable_content_region.height - 1  # the last line: the legend

        def drawn_row(y: int) -> bool:  # a box: a block of its colour, or of its gradient's
            return any(seg.style is not None and ("█" in seg.text or seg.style.bgcolor)
                       for seg in canvas.render_line(y))

        filled = [y for y in range(height) if drawn_row(y)]
        assert filled[0] <= 1 and filled[-1] >= height - 3  # the graph, top to bottom
        await pilot.press("W")
        assert not canvas.overview


async def test_full_stop_centres_the_selected_node():
    app = Pane()
    async with app.run_test(size=SIZE) as pilot:
        canvas = await drawn(pilot)
        graph = canvas._canon.graph
        first_op = min((n for n in graph.nodes.values() if n.kind == "op"), key=lambda n: n.seq)
        canvas.selected = first_op.id
        await pilot.pause()
        canvas.scroll_to(0, canvas.max_scroll_y, animate=False, immediate=True)
        await pilot.press("full_stop")
        await pilot.pause()
        box = canvas.scene.boxes[canvas.box_of(first_op.id)]
        view = canvas.scrollable_content_region
        middle = canvas.scroll_y + view.height / 2
        assert canvas.scroll_y == 0 or abs((box.top + box.bottom) / 2 - middle) <= 2
        assert box.top >= canvas.scroll_y and box.bottom < canvas.scroll_y + view.height
