"""GraphCanvas in a tiny host app (Pilot): drawing, selection, highlight, folding, failures.

Layouts come from ``canvas_helpers.fake_layout`` (no Graphviz: fast and exact); the real
layout is exercised in test_raster.py.
"""

from __future__ import annotations

import threading
import time

from canvas_helpers import chain, fake_layout, grow, shared_weight, traced_graphs
from dyngraph.tui.graph_canvas import GraphCanvas
from textual.app import App, ComposeResult

from dyngraph.capture.events import Summary
from dyngraph.capture.graph import GraphBuilder, GraphNode


class CountingLayout:
    def __init__(self, gate: threading.Event | None = None, fail: str | None = None) -> None:
        self.calls = 0
        self.gate = gate
        self.fail = fail

    def __call__(self, dot: str):
        self.calls += 1
        if self.fail:
            raise RuntimeError(self.fail)
        if self.gate is not None and self.calls > 1:
            self.gate.wait(5)
        return fake_layout(dot)


class Host(App):
    def __init__(self, layout=None) -> None:
        super().__init__()
        self.layout = layout or CountingLayout()
        self.selections: list[int] = []

    def compose(self) -> ComposeResult:
        yield GraphCanvas(id="graph", layout_fn=self.layout, min_interval=0)

    def on_graph_canvas_node_selected(self, message: GraphCanvas.NodeSelected) -> None:
        self.selections.append(message.node_id)


async def settle(pilot, canvas: GraphCanvas, timeout: float = 5.0) -> None:
    """Wait until the canvas draws everything it was shown (its layout arrived)."""
    deadline = time.monotonic() + timeout
    while (canvas.scene is None or canvas.status) and time.monotonic() < deadline:
        await pilot.pause(0.02)
    await pilot.pause()


def segments_with(canvas: GraphCanvas, text: str):
    for y in range(canvas.size.height):
        for seg in canvas.render_line(y):
            if text in seg.text:
                yield seg


def ids_by_label(graph) -> dict[str, int]:
    return {n.op or n.name or "input": n.id for n in graph.nodes.values()}


async def test_show_draws_the_graph_and_angle_brackets_move_the_selection():
    first, _ = traced_graphs(2)
    ids = ids_by_label(first)
    app = Host()
    async with app.run_test(size=(90, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(first, current=ids["linear"])
        canvas.focus()
        await settle(pilot, canvas)
        text = "\n".join(canvas.visible_lines())
        for label in ("input 4×3", "enc.0.weight", "linear 4×2", "relu 4×2", "sum scalar"):
            assert label in text
        assert text.index("linear 4×2") < text.index("relu 4×2") < text.index("sum scalar")
        await pilot.press("greater_than_sign")
        assert app.selections == [ids["relu"]] and canvas.selected == ids["relu"]
        await pilot.press("greater_than_sign", "less_than_sign", "less_than_sign")
        assert app.selections == [ids["relu"], ids["mul"], ids["relu"], ids["linear"]]
        assert any(seg.style.underline for seg in segments_with(canvas, "linear 4×2"))


async def test_current_highlight_moves_without_a_new_layout():
    first, second = traced_graphs(2)
    ids = ids_by_label(first)
    app = Host()
    async with app.run_test(size=(90, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(first, current=ids["relu"])
        await settle(pilot, canvas)
        assert all(seg.style.reverse for seg in segments_with(canvas, "relu 4×2"))
        assert not any(seg.style.reverse for seg in segments_with(canvas, "mul 4×2"))
        canvas.show(first, current=ids["mul"])
        await pilot.pause()
        assert not any(seg.style.reverse for seg in segments_with(canvas, "relu 4×2"))
        assert all(seg.style.reverse for seg in segments_with(canvas, "mul 4×2"))
        # The next iteration has other tensor ids but the same structure: no new layout,
        # whether shown whole or as it is being built.
        builder = GraphBuilder()
        canvas.show(second, current=ids_by_label(second)["sum"])
        partial = builder.current
        partial.nodes = dict(list(second.nodes.items())[:4])
        partial.edges = [e for e in second.edges if e.dst in partial.nodes]
        partial.calls = second.calls
        canvas.show(partial, current=max(partial.nodes))
        await pilot.pause()
        assert app.layout.calls == 1 and canvas.status == ""
        text = "\n".join(canvas.visible_lines())
        assert "linear 4×2" in text and "relu" not in text


async def test_follow_edges_enter_and_click_post_node_selected():
    first, _ = traced_graphs(2)
    ids = ids_by_label(first)
    app = Host()
    async with app.run_test(size=(90, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(first, current=ids["linear"])
        canvas.focus()
        await settle(pilot, canvas)
        await pilot.press("K")  # linear -> its consumer
        await pilot.press("K")  # relu -> mul
        await pilot.press("J")  # mul -> relu, its input
        assert app.selections == [ids["relu"], ids["mul"], ids["relu"]]
        await pilot.press("enter")
        assert app.selections[-1] == ids["relu"]
        box = canvas.scene.boxes[canvas.box_of(ids["sum"])]
        x, y = box.left + 2 - canvas.scroll_offset.x, box.top + 1 - canvas.scroll_offset.y
        await pilot.click(GraphCanvas, offset=(x, y))
        assert app.selections[-1] == ids["sum"] and canvas.selected == ids["sum"]


async def test_nonfinite_node_is_drawn_in_the_error_style():
    app = Host()
    async with app.run_test(size=(60, 30)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(chain(3, nan_at=2))
        await settle(pilot, canvas)
        error = canvas.get_component_rich_style("graph-canvas--nonfinite").color
        assert error is not None
        assert all(seg.style.color == error for seg in segments_with(canvas, "op2 4×3"))
        assert not any(seg.style.color == error for seg in segments_with(canvas, "op3 4×3"))
        canvas.show(chain(3, nan_at=2), current=2)  # the current op stays red, reversed
        canvas.selected = 2
        await pilot.pause()
        (seg,) = segments_with(canvas, "op2 4×3")
        assert seg.style.color == error and seg.style.reverse and seg.style.underline


async def test_growing_graph_shows_the_last_layout_and_lists_new_nodes():
    gate = threading.Event()
    app = Host(CountingLayout(gate))
    graph = chain(3)
    async with app.run_test(size=(70, 30)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph, current=3)
        await settle(pilot, canvas)
        grow(graph, GraphNode(9, "op", op="tanh", shape=(4, 3), seq=9), [3])
        canvas.show(graph, current=9)
        await pilot.pause(0.05)
        lines = canvas.visible_lines()
        assert "laying out… +1 node: tanh 4×3" in lines[-1]
        assert any("op3 4×3" in line for line in lines)
        gate.set()
        await settle(pilot, canvas)
        text = "\n".join(canvas.visible_lines())
        assert "tanh 4×3" in text and "laying out" not in text


async def test_a_failing_graphviz_still_draws_the_graph_and_says_why():
    app = Host(CountingLayout(fail="Graphviz (dot) failed: syntax error"))
    async with app.run_test(size=(100, 30)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(chain(3))
        deadline = time.monotonic() + 5
        while "failed" not in canvas.info and time.monotonic() < deadline:
            await pilot.pause(0.02)
        lines = canvas.visible_lines()
        text = "\n".join(lines)
        assert all(f"{name} 4×3" in text for name in ("input", "op2", "op3"))  # drawn
        assert canvas.info.startswith("drawn by dyngraph's layered layout: RuntimeError: "
                                      "Graphviz (dot) failed: syntax error")
        assert canvas.status == ""
        assert "layout failed" not in text and app.is_running


async def test_z_folds_and_unfolds_a_module_and_zoom_compacts_labels():
    first, _ = traced_graphs(2)
    ids = ids_by_label(first)
    app = Host()
    async with app.run_test(size=(90, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(first, current=ids["linear"])
        canvas.focus()
        await settle(pilot, canvas)
        canvas.selected = ids["linear"]
        await pilot.press("z")
        await settle(pilot, canvas)
        text = "\n".join(canvas.visible_lines())
        assert "enc.0 (×1 op)" in text and "linear 4×2" not in text
        assert "enc.0.weight" not in text  # its parameters fold in with it
        await pilot.press("z")
        await settle(pilot, canvas)
        assert "linear 4×2" in "\n".join(canvas.visible_lines())
        await pilot.press("minus")
        await settle(pilot, canvas)
        text = "\n".join(canvas.visible_lines())
        assert "[linear]" in text and "linear 4×2" not in text
        await pilot.press("plus")
        await settle(pilot, canvas)
        assert "linear 4×2" in "\n".join(canvas.visible_lines())


async def test_backward_mode_and_centre_on_current():
    first, _ = traced_graphs(2)
    app = Host()
    async with app.run_test(size=(70, 16)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(first, current=ids_by_label(first)["linear"], mode="backward")
        canvas.focus()
        await settle(pilot, canvas)
        assert "SumBackward0" in "\n".join(canvas.scene and _all_text(canvas))
        await pilot.press("j", "j", "j", "j", "j", "j", "j", "j")
        await pilot.press("full_stop")
        await pilot.pause()
        assert any("AddmmBackward0" in line for line in canvas.visible_lines())


def _all_text(canvas: GraphCanvas) -> list[str]:
    from dyngraph.tui import raster

    return raster.rasterize(canvas.scene).lines


def test_show_rejects_an_unknown_mode():
    canvas = GraphCanvas()
    try:
        canvas.show(chain(2), mode="sideways")
    except ValueError as exc:
        assert "sideways" in str(exc)
    else:
        raise AssertionError("show() accepted mode='sideways'")



async def test_prefetch_lays_out_once_for_every_step_of_an_iteration():
    first, second = traced_graphs(2)
    order = sorted(second.nodes.values(), key=lambda n: n.seq)
    app = Host()
    async with app.run_test(size=(90, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.prefetch(first)
        deadline = time.monotonic() + 5
        while not len(canvas.cache) and time.monotonic() < deadline:
            await pilot.pause(0.02)
        for k in range(1, len(order) + 1):  # replay stepping through the next iteration
            partial = GraphBuilder().current
            partial.nodes = {n.id: n for n in order[:k]}
            partial.edges = [e for e in second.edges if e.dst in partial.nodes]
            partial.calls = second.calls
            canvas.show(partial, current=order[k - 1].id)
            assert canvas.status == ""
        await pilot.pause()
        assert app.layout.calls == 1
        assert "sum scalar" in "\n".join(canvas.visible_lines())


class Stepper(Host):
    BINDINGS = [("left", "step(-1)"), ("right", "step(1)")]

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[int] = []

    def action_step(self, by: int) -> None:
        self.steps.append(by)


async def test_plain_left_right_reach_the_app_and_hjkl_pan():
    app = Stepper()
    graph = chain(2)
    for i in range(3, 30):  # wide: many leaves feeding one op
        grow(graph, GraphNode(i, "leaf", name=f"leaf_number_{i}", shape=(2,), seq=i), [])
    grow(graph, GraphNode(99, "op", op="stack", shape=(27, 2), seq=99), list(range(3, 30)))
    async with app.run_test(size=(40, 8)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph)
        canvas.focus()
        await settle(pilot, canvas)
        await pilot.press("left", "right")
        assert app.steps == [-1, 1]
        x, y = canvas.scroll_offset
        await pilot.press("l", "j")
        assert canvas.scroll_offset.x > x and canvas.scroll_offset.y > y
        await pilot.press("h", "k")
        assert canvas.scroll_offset == (x, y)


async def test_an_empty_graph_says_so():
    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(chain(2))
        await settle(pilot, canvas)
        canvas.show(GraphBuilder().current)
        await pilot.pause()
        assert canvas.visible_lines()[0].startswith("(empty graph)")
        assert canvas.box_of(1) is None


async def test_copies_of_a_shared_weight_select_and_highlight_as_one_node():
    graph = shared_weight(3)  # weight 1, input 2, linears 3, 4, 5
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph, current=4)
        canvas.focus()
        await settle(pilot, canvas)
        copies = canvas.copies_of(canvas.box_of(1))
        assert len(copies) == 3 and canvas.box_of(1) == copies[0]
        # Clicking the last copy selects the weight itself.
        box = canvas.scene.boxes[copies[2]]
        x, y = box.left + 2 - canvas.scroll_offset.x, box.top + 1 - canvas.scroll_offset.y
        await pilot.click(GraphCanvas, offset=(x, y))
        assert app.selections == [1] and canvas.selected == 1
        underlined = list(segments_with(canvas, "cell.weight_ih"))
        assert len(underlined) == 3 and all(seg.style.underline for seg in underlined)
        assert canvas.box_of(1) == copies[0]  # documented: box_of gives the first copy
        # K goes to that copy's one consumer (the third matmul), not the first.
        await pilot.press("K")
        assert app.selections[-1] == 5
        # J from a matmul goes to its own copy of the weight: K then comes straight back.
        await pilot.press("J")
        assert app.selections[-1] == 1
        await pilot.press("K")
        assert app.selections[-1] == 5
        canvas.selected = 4
        await pilot.press("J", "K")
        assert app.selections[-2:] == [1, 4]
        # The current node's highlight (reverse) also marks every copy.
        canvas.show(graph, current=1)
        await pilot.pause()
        marked = list(segments_with(canvas, "cell.weight_ih"))
        assert len(marked) == 3 and all(seg.style.reverse for seg in marked)


async def test_every_copy_of_a_nonfinite_shared_weight_is_red():
    graph = shared_weight(3)
    graph.nodes[1].summary = Summary(shape=(4, 4), dtype="float32", inf=2)
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph)
        await settle(pilot, canvas)
        error = canvas.get_component_rich_style("graph-canvas--nonfinite").color
        marked = list(segments_with(canvas, "cell.weight_ih"))
        assert len(marked) == 3 and all(seg.style.color == error for seg in marked)
        assert not any(seg.style.color == error for seg in segments_with(canvas, "matmul"))


async def test_stepping_past_the_view_brings_the_current_op_to_the_middle():
    graph = chain(40)  # a long chain: taller than the pane
    ops = [n.id for n in graph.nodes.values() if n.kind == "op"]
    app = Host()
    async with app.run_test(size=(60, 20)) as pilot:
        canvas = app.query_one(GraphCanvas)
        canvas.show(graph, current=ops[0])
        await settle(pilot, canvas)
        top = canvas.scroll_offset.y
        canvas.show(graph, current=ops[1])  # still in view: the view stays put
        await pilot.pause()
        assert canvas.scroll_offset.y == top
        for op in ops[2 : len(ops) // 2]:  # walk down the chain, as `n` does (not to its end,
            # where the view cannot scroll further and the last op must sit low)
            canvas.show(graph, current=op)
            await pilot.pause()
            box = canvas.scene.boxes[canvas.box_of(op)]
            middle = canvas.scroll_offset.y + canvas.scrollable_content_region.height / 2
            view_top = canvas.scroll_offset.y
            assert view_top <= box.top < view_top + canvas.scrollable_content_region.height
        # The view followed by re-centring, not by scrolling the op to the bottom edge.
        assert abs(box.top + box.height / 2 - middle) <= canvas.scrollable_content_region.height / 4
