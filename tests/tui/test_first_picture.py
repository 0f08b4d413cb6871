"""A big trace's first picture (issue 27, part 1): the module-level picture of a big
iteration is laid out while the trace still loads, and the jump to it draws that picture
without a pass over the iteration's nodes on the UI thread; the gradient norms read the
graph built while loading instead of building it again. Pilot at 200x50 and 80x24, on a
trace file read as ``dyngraph view`` reads it (decoded in chunks on a thread)."""

from __future__ import annotations

import threading

import pytest
from canvas_helpers import Counting
from dyngraph.tui import app as app_module
from dyngraph.tui import canvas_layout as cl
from dyngraph.tui.graph_canvas import GraphCanvas
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource
from replay_helpers import open_app, record_gpt, wait_for

SIZES = [(200, 50), (80, 24)]


@pytest.mark.parametrize("size", SIZES)
async def test_a_big_trace_lays_out_its_picture_while_loading_and_the_jump_makes_no_signatures(
        tmp_path, monkeypatch, size):
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=24)  # 24 blocks: a few hundred nodes, over the (lowered) threshold
    monkeypatch.setattr(app_module, "PREFETCH_ABOVE", 100)
    layout = Counting()
    passes: list[int] = []  # signature passes on the UI thread, by node count
    rebuild = cl.Canonical._rebuild

    def counted(self, graph):
        if threading.current_thread() is threading.main_thread():
            passes.append(len(graph.nodes))
        return rebuild(self, graph)

    monkeypatch.setattr(cl.Canonical, "_rebuild", counted)
    app = open_app(path, layout)
    async with app.run_test(size=size) as pilot:
        canvas = app.query_one(GraphCanvas)
        # The trace opens on its first op; the forward pass's picture is made meanwhile.
        await wait_for(pilot, lambda: not app.source.loading and canvas._canon.whole
                       is not None and not canvas.status)
        forward = len(canvas._canon.whole.ids)
        assert forward > 100
        laid_out, passes[:] = len(layout.sizes), []
        await pilot.press("f")  # finish the forward pass: the whole iteration's picture
        await wait_for(pilot, lambda: canvas.scene is not None and not canvas.status)
        await pilot.pause()
        assert len(app.graph.nodes) == forward
        # Before backward, no gradient is shown (the copies without them made ahead).
        assert all(n.grad is None for n in app.graph.nodes.values())
        assert any(n.grad is not None for n in app.model.graph(1).nodes.values())
        # The jump took the signatures made ahead (no pass over its nodes here) and
        # drew the layout made ahead (no new one).
        assert not [n for n in passes if n > 64], passes
        assert len(layout.sizes) == laid_out
        # What the user sees: the module-level picture, the 24 blocks one run.
        run = next(b for b, n in enumerate(canvas.scene.view.nodes) if n.members)
        canvas._select_box(run)  # (the pane scrolls to it)
        await pilot.pause()
        text = "\n".join(canvas.visible_lines())
        assert "h.0 … h.23 ×24" in text or "h.0… ×24" in text
        assert "gelu" not in text
        assert len(canvas.scene.boxes) < 40
        # Stepping back into the forward pass keeps to prefixes of the same work.
        await pilot.press("left")
        await pilot.pause()
        assert not [n for n in passes if n > 64], passes
        assert len(app.graph.nodes) <= forward


async def test_the_gradient_norms_read_the_graph_built_while_the_trace_loaded(
        tmp_path, monkeypatch):
    path = tmp_path / "gpt.dgtrace"
    record_gpt(path, layers=4)
    builds: list[int] = []
    build = Model._build

    def counted(self, info, end):
        builds.append(info.index)
        return build(self, info, end)

    monkeypatch.setattr(Model, "_build", counted)
    # Chunks small enough that the iteration arrives over several ticks, as a big one does.
    monkeypatch.setattr(ReplaySource, "CHUNK", 64)
    app = open_app(path, Counting())
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: not app.source.loading and not app._norms_busy
                       and app.model.has_norms(1))
        # The iteration was built once, as it loaded; the norms did not build it again.
        assert builds == []
        # ... and what they give is there: a node's gradient norm over the iterations,
        # in the inspector.
        await pilot.press("colon")
        await pilot.press("1", "enter")
        await pilot.pause(0.2)
        node = next(n for n in app.graph.nodes.values() if n.kind == "op" and n.grad)
        app.select_node(node.id)
        await pilot.pause(0.2)
        assert app.model.grad_history(node) == [pytest.approx(node.grad.norm)]
        screen = app.export_screenshot().replace("&#160;", " ")
        assert "over 1 iteration" in screen
