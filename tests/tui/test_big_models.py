"""Big models in the graph pane: the module-level picture, opening one module in place, the
fit view with names (issue 27, part 1). Pilot, at 200x50 and 80x24; layouts from
``fake_layout`` (what is laid out is what matters here, not where Graphviz puts it)."""

from __future__ import annotations

import io

import pytest
from canvas_helpers import Counting, fake_layout, gpt_events, gpt_graph
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.graph_canvas import GraphCanvas
from dyngraph.tui.inspector import Inspector, unit_view
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource
from rich.console import Console
from test_graph_canvas import Host, settle

from dyngraph.capture import events as ev

SIZES = [(200, 50), (80, 24)]


def text_of(canvas: GraphCanvas) -> str:
    return "\n".join(canvas.visible_lines())


def run_box(canvas: GraphCanvas) -> int:
    return next(b for b, n in enumerate(canvas.scene.view.nodes) if n.members)


@pytest.mark.parametrize("size", SIZES)
async def test_a_big_model_opens_folded_and_enter_opens_a_module_in_place(size):
    graph = gpt_graph(24)  # 371 nodes: past the size where the pane folds
    layout = Counting()
    app = Host(layout)
    async with app.run_test(size=size) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph)
        canvas.focus()
        await settle(pilot, canvas)
        boxes = len(canvas.scene.boxes)
        assert boxes < 40, boxes  # the module-level picture, not 371 boxes
        assert max(layout.sizes) <= boxes  # no layout over more boxes than are shown
        run = run_box(canvas)
        canvas._select_box(run)
        await pilot.pause()
        text = text_of(canvas)
        assert "transformer.h.0 … h.23 ×24" in text or "h.0… ×24" in text
        assert "gelu" not in text  # the blocks' insides are folded away
        # Enter opens the run in place: one box per block, framed by the run.
        await pilot.press("enter")
        await settle(pilot, canvas)
        labels = [n.label for n in canvas.scene.view.nodes]
        assert sum(label.startswith("transformer.h.") for label in labels) == 24
        assert any(c.label == "transformer.h.0 … h.23 ×24" for c in canvas.scene.view.clusters)
        assert max(layout.sizes) <= len(canvas.scene.boxes)
        # Enter on one member opens it: its ops are drawn, the others stay boxes.
        member = next(b for b, n in enumerate(canvas.scene.view.nodes)
                      if n.label.startswith("transformer.h.5 "))
        canvas._select_box(member)
        await pilot.press("enter")
        await settle(pilot, canvas)
        frames = [c.label for c in canvas.scene.view.clusters]
        assert "transformer.h.5" in frames and "transformer.h.6" not in frames
        # One level opens: h.5's own ops, its submodules as boxes of their own.
        inside = [n.label for n in canvas.scene.view.nodes if n.cluster is not None
                  and canvas.scene.view.clusters[n.cluster].label == "transformer.h.5"]
        assert "transformer.h.5.mlp (×3 ops)" in inside
        assert sum(label.startswith("add ") for label in inside) == 2
        # z on a folded member folds the whole run again.
        other = next(b for b, n in enumerate(canvas.scene.view.nodes)
                     if n.label.startswith("transformer.h.7 "))
        canvas._select_box(other)
        await pilot.press("z")
        await settle(pilot, canvas)
        assert len(canvas.scene.boxes) == boxes
        # The fit view names the module-level boxes.
        await pilot.press("W")
        await pilot.pause()
        assert "h.0 … h.23" in text_of(canvas) or "transformer.h" in text_of(canvas)


async def test_the_inspector_describes_a_folded_run_member_by_member():
    events = gpt_events(24)
    header = ev.Header(seq=0, iteration=1, script="gpt.py")
    end = ev.RunEnd(seq=events[-1].seq + 1, iteration=events[-1].iteration, status=0)

    class Trace:
        pass

    trace = Trace()
    trace.events = [header, *events, end]  # type: ignore[attr-defined]
    app = DebuggerApp(ReplaySource(Model(), trace))
    async with app.run_test(size=(200, 50)) as pilot:
        canvas = app.query_one("#graph")
        canvas._layout_fn = fake_layout
        canvas._worker.layout_fn = fake_layout
        await pilot.press("colon")  # go to iteration 1: the whole of it, gradients in
        await pilot.press("1", "enter")
        await settle(pilot, canvas)
        canvas._select_box(run_box(canvas))
        await pilot.pause()
        inspector = app.query_one(Inspector)
        assert inspector.border_title == "inspector · module"
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(unit_view(canvas.unit_info(app.selected_unit)))
        body = console.export_text()
        assert "transformer.h.0 … h.23 ×24" in body and "folded run" in body
        assert "24 calls" in body and "largest norm" in body
        # The strip under the run's name: one coloured cell per block.
        strip = canvas._strip(run_box(canvas))
        assert sum(cell is not None for cell in strip) == 24
        # Stepping back through backward redraws the strip over the graph so far.
        await pilot.press("left", "left")
        await pilot.pause()
        assert app.is_running and len(canvas._strip(run_box(canvas))) == len(strip)
