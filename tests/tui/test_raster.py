"""The canvas raster and layout cache: pure functions, no Textual, no Graphviz (but one)."""

from __future__ import annotations

import re
import threading
import time

import pytest
from canvas_helpers import chain, fake_layout, grow, rnn_loop, shared_weight, traced_graphs
from dyngraph.tui import canvas_fold as cf
from dyngraph.tui import canvas_layout as cl
from dyngraph.tui import raster
from dyngraph.tui.raster import ViewCluster, ViewEdge, ViewGraph, ViewNode
from rich.cells import cell_len

import dyngraph
from dyngraph import nn
from dyngraph.capture.graph import GraphNode, build_graphs


def scene_of(graph, rule=None, compact=False, layout=fake_layout):
    rule = rule or cl.Collapse()
    canon = cl.Canonical()
    canon.update(graph)
    return cl.compute_entry(canon.sigs, rule, compact, layout), canon


def find(grid: raster.Grid, text: str) -> tuple[int, int]:
    for row, line in enumerate(grid.lines):
        col = line.find(text)
        if col >= 0:
            return row, col
    raise AssertionError(f"{text!r} not drawn:\n{grid.text}")


def test_chain_draws_boxes_in_order_joined_by_an_edge():
    entry, _ = scene_of(chain(3))
    grid = raster.rasterize(entry.scene)
    (r1, c1), (r2, c2), (r3, _) = (find(grid, t) for t in ("input 4×3", "op2 4×3", "op3 4×3"))
    assert r1 < r2 < r3
    first, second = entry.scene.boxes[0], entry.scene.boxes[1]
    # The edge leaves the first box's bottom border and lands on the second's top with ▼.
    bottom = grid.lines[first.bottom][first.left:first.right + 1]
    top = grid.lines[second.top][second.left:second.right + 1]
    assert "┬" in bottom and "▼" in top
    col = first.left + bottom.index("┬")
    reached = trace_edge(grid, first.bottom, col)
    assert (second.top, second.left + top.index("▼")) in reached
    assert grid.style_at(r2, c2) == "box.op" and grid.style_at(first.bottom + 1, col) == "edge"


LINKS = {v: k for k, v in raster.GLYPHS.items() if k}
LINKS.update({"│": raster.UP | raster.DOWN, "─": raster.LEFT | raster.RIGHT,
              "┬": raster.DOWN, "▼": raster.UP})
STEPS = {raster.UP: (-1, 0, raster.DOWN), raster.DOWN: (1, 0, raster.UP),
         raster.LEFT: (0, -1, raster.RIGHT), raster.RIGHT: (0, 1, raster.LEFT)}


def trace_edge(grid: raster.Grid, row: int, col: int) -> set[tuple[int, int]]:
    """Every cell reachable from (row, col) along connected box-drawing glyphs."""
    seen, todo = set(), [(row, col)]
    while todo:
        r, c = todo.pop()
        if (r, c) in seen:
            continue
        seen.add((r, c))
        bits = LINKS.get(grid.lines[r][c], 0)
        for bit, (dr, dc, back) in STEPS.items():
            nr, nc = r + dr, c + dc
            if bits & bit and 0 <= nr < len(grid.lines) and 0 <= nc < len(grid.lines[nr]):
                if LINKS.get(grid.lines[nr][nc], 0) & back:
                    todo.append((nr, nc))
    return seen


def test_boxes_have_borders_and_rows_have_the_scene_width():
    entry, _ = scene_of(chain(3))
    grid = raster.rasterize(entry.scene)
    box = entry.scene.boxes[1]
    assert grid.lines[box.top][box.left] == "┌" and grid.lines[box.bottom][box.right] == "┘"
    assert {cell_len(line) for line in grid.lines} == {entry.scene.width}


def test_prefix_hides_nodes_and_edges_not_built_yet():
    entry, _ = scene_of(chain(3))
    full = raster.rasterize(entry.scene).text
    part = raster.rasterize(entry.scene, upto=2).text
    assert "op3" in full and "op3" not in part and "op2" in part
    third = entry.scene.boxes[2]
    assert "▼" not in part.splitlines()[third.top]


def test_cluster_frame_contains_its_nodes_and_names_the_module():
    view = ViewGraph(
        nodes=[ViewNode("n0", "leaf", "x", 0), ViewNode("n1", "op", "relu 2", 1, cluster=0),
               ViewNode("n2", "op", "sum scalar", 2)],
        edges=[ViewEdge(0, 1, 1), ViewEdge(1, 2, 2)],
        clusters=[ViewCluster("encoder.block", "encoder.block", None, 1)])
    scene = raster.build_scene(view, fake_layout(cl.terminal_dot(view)))
    (frame,) = scene.frames
    inner, outer = scene.boxes[1], scene.boxes[0]
    assert frame.left < inner.left and inner.right < frame.right
    assert frame.top < inner.top and inner.bottom < frame.bottom
    assert not (frame.top <= outer.top <= frame.bottom and frame.left <= outer.left <= frame.right)
    grid = raster.rasterize(scene)
    assert grid.lines[frame.top][frame.left] == "╭"
    # A frame narrower than its module's path keeps the path's end.
    assert "….block" in grid.lines[frame.top] or "r.block ─" in grid.lines[frame.top]
    view.nodes[1].label = "a much wider label for the frame"
    scene = raster.build_scene(view, fake_layout(cl.terminal_dot(view)))
    assert "─ encoder.block ─" in raster.rasterize(scene).lines[scene.frames[0].top]


def test_odd_names_are_sanitised_and_keep_cells_aligned():
    g = chain(2)
    g.nodes[1].name = "evil\x1b[31m\nname\t[bold]ünïcode 名前\u0301"
    g.nodes[1].kind = "param"
    entry, _ = scene_of(g)
    grid = raster.rasterize(entry.scene)
    text = grid.text
    assert "\x1b" not in text and "\t" not in text and "\u0301" not in text
    assert "evil\\x1b[31m\\nname\\t[bold]ünïcode 名前" in text
    assert {cell_len(line) for line in grid.lines} == {entry.scene.width}
    # Cutting the view through a wide character leaves a blank, never half a glyph.
    box = entry.scene.boxes[0]
    row = box.top + 1
    start = box.left + grid.lines[row][box.left:].index("名") + 1
    text, _ = raster.render_row(entry.scene, row, start, 6)
    assert cell_len(text) == 6


def test_box_style_callback_styles_only_that_box():
    entry, _ = scene_of(chain(3))
    grid = raster.rasterize(entry.scene, box_style=lambda b: "error" if b == 1 else "plain")
    r, c = find(grid, "op2")
    assert grid.style_at(r, c) == "error"
    r, c = find(grid, "op3")
    assert grid.style_at(r, c) == "plain"


def test_compact_boxes_are_one_row():
    entry, _ = scene_of(chain(3), compact=True)
    grid = raster.rasterize(entry.scene)
    r, c = find(grid, "[op2]")
    assert all(b.height == 1 for b in entry.scene.boxes)
    assert "▼" in grid.lines[r - 1]


def test_collapsed_module_is_one_box_with_its_op_count():
    (g, _) = traced_graphs(2)
    entry, canon = scene_of(g, rule=cl.Collapse(collapsed=frozenset({"enc"})))
    labels = [n.label for n in entry.scene.view.nodes]
    assert "enc (×2 ops)" in labels
    # The parameters of enc.0 fold into the box too; the leaf and the two outer ops stay.
    assert len(labels) == 4
    text = raster.rasterize(entry.scene).text
    assert "enc (×2 ops)" in text and "linear" not in text
    depth_one = cl.build_view(canon.sigs, cl.Collapse(depth=1), False)[0]
    assert sorted(n.label for n in depth_one.nodes if n.kind == "module") == [
        "enc.0 (×1 op)", "enc.1 (×1 op)"]


def test_same_structure_in_another_iteration_reuses_the_layout():
    first, second = traced_graphs(2)
    a, b = cl.Canonical(), cl.Canonical()
    a.update(first)
    b.update(second)
    assert a.ids != b.ids and a.sigs == b.sigs
    cache = cl.LayoutCache()
    cache.add(cl.compute_entry(a.sigs, cl.Collapse(), False, fake_layout))
    entry, n = cache.best(b.sigs, False, cl.Collapse().user)
    assert entry is not None and n == len(b.sigs)
    entry, n = cache.best(b.sigs[:3], False, cl.Collapse().user)
    assert n == 3  # the graph "so far" is drawn from the finished iteration's layout
    assert cache.best(b.sigs, True, cl.Collapse().user) == (None, 0)  # other zoom


def test_canonical_grows_incrementally_like_a_rebuild():
    g = chain(3)
    canon = cl.Canonical()
    canon.update(g)
    assert not canon.update(g)
    grow(g, GraphNode(10, "op", op="add", shape=(4, 3), seq=10), [3, 1])
    assert canon.update(g)
    fresh = cl.Canonical()
    fresh.update(g)
    assert canon.sigs == fresh.sigs and canon.ids == fresh.ids
    assert canon.sigs[-1][6] == (2, 0)


def test_a_small_graph_opens_unfolded():
    (g,) = traced_graphs(1)
    canon = cl.Canonical()
    canon.update(g)
    folded, _ = cl.build_view(canon.sigs, cl.Collapse(fold=True), False)
    plain, _ = cl.build_view(canon.sigs, cl.Collapse(), False)
    assert len(canon.sigs) < cl.LARGE_GRAPH
    assert [n.label for n in folded.nodes] == [n.label for n in plain.nodes]
    assert not any(n.kind == "module" for n in folded.nodes)


def test_common_prefix():
    assert cl.common_prefix([1, 2, 3, 4], [1, 2, 9]) == 2
    assert cl.common_prefix([1, 2], [1, 2, 3]) == 2
    assert cl.common_prefix([], [1]) == 0


def test_worker_reports_failure_instead_of_raising():
    done = threading.Event()
    seen = []

    def broken(_dot):
        raise RuntimeError("dot exploded\nsecond line")

    def on_done(job, entry, error):
        seen.append((entry, error))
        done.set()

    worker = cl.LayoutWorker(on_done, cl.LayoutCache(), layout_fn=broken, min_interval=0)
    canon = cl.Canonical()
    canon.update(chain(2))
    worker.submit(cl.Job(canon.sigs, False, cl.Collapse().user))
    assert done.wait(5)
    worker.close()
    [(entry, error)] = seen  # drawn by the layered layout, which says why
    assert error is None and entry is not None and len(entry.scene.boxes) >= 2
    assert entry.note == "drawn by dyngraph's layered layout: RuntimeError: dot exploded"


def test_worker_keeps_only_the_newest_job_and_throttles():
    release = threading.Event()
    calls, finished = [], []

    def slow(dot):
        calls.append(time.monotonic())
        release.wait(5)
        return fake_layout(dot)

    cache = cl.LayoutCache()
    worker = cl.LayoutWorker(lambda job, e, err: finished.append(job.token), cache,
                             layout_fn=slow, min_interval=0.2)
    canon = cl.Canonical()
    g = chain(2)
    for token in range(5):
        canon.update(g)
        worker.submit(cl.Job(list(canon.sigs), False, cl.Collapse().user, token=token))
        grow(g, GraphNode(100 + token, "op", op="relu", shape=(1,), seq=100 + token),
             [g.nodes and max(g.nodes)])
        time.sleep(0.01)
    release.set()
    deadline = time.monotonic() + 5
    while 4 not in finished and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.close()
    assert finished[-1] == 4 and len(calls) <= 3 and len(calls) == len(finished)
    assert all(b - a >= 0.19 for a, b in zip(calls, calls[1:], strict=False))


def test_real_graphviz_layout_draws_the_traced_graph():
    exporters = pytest.importorskip("dyngraph.exporters")
    layout = getattr(exporters, "layout", None)
    if layout is None:
        pytest.skip("dyngraph.exporters.layout is not there yet")
    (g,) = traced_graphs(1)
    entry, _ = scene_of(g, layout=layout)
    assert entry.scene.missing == 0
    grid = raster.rasterize(entry.scene)
    rows = [find(grid, t)[0] for t in ("linear 4×2", "relu 4×2", "mul 4×2", "sum scalar")]
    assert rows == sorted(rows) and len(set(rows)) == 4
    assert "enc.0.weight" in grid.text and "╭─ enc" in grid.text
    assert grid.text.count("▼") >= 4


def test_collapse_rule_depth_and_overrides():
    rule = cl.Collapse(depth=1)
    assert rule.owner("") is None and rule.owner("enc") is None
    assert rule.owner("enc.layers.3.attn") == "enc.layers"
    opened = cl.Collapse(depth=1, expanded=frozenset({"enc.layers"}))
    assert opened.owner("enc.layers.3.attn") == "enc.layers.3"  # one level opens at a time
    shut = cl.Collapse(collapsed=frozenset({"enc"}))
    assert shut.owner("enc.layers.3") == "enc" and shut.owner("dec.0") is None


def test_a_shared_leaf_is_drawn_beside_each_consumer():
    entry, canon = scene_of(shared_weight(3))
    view, scene = entry.scene.view, entry.scene
    copies = [i for i, n in enumerate(view.nodes) if n.label == "cell.weight_ih"]
    assert len(copies) == 3
    first = entry.to_box[canon.index[1]]
    assert first == copies[0] and all(view.nodes[i].copy_of == first for i in copies)
    for i in copies:  # one edge each, into a different matmul
        assert [e for e in view.edges if i in (e.src, e.dst)] == [
            e for e in view.edges if e.src == i]
        assert sum(e.src == i for e in view.edges) == 1
    heads = {e.dst for e in view.edges if e.src in copies}
    assert {view.nodes[h].label for h in heads} == {"matmul 4×2"} and len(heads) == 3
    grid = raster.rasterize(scene)
    assert grid.text.count("cell.weight_ih") == 3
    # Each copy is born with its consumer: the graph so far shows one copy per matmul.
    assert raster.rasterize(scene, upto=3).text.count("cell.weight_ih") == 1
    assert raster.rasterize(scene, upto=4).text.count("cell.weight_ih") == 2
    # Turned off, the weight is one box with three edges.
    single = cl.compute_entry(canon.sigs, cl.Collapse(), False, fake_layout, copy_shared=0)
    assert raster.rasterize(single.scene).text.count("cell.weight_ih") == 1


def test_long_shared_weight_loop_hands_dot_no_leaf_with_several_edges():
    # A 60-step loop took dot 8 s with U, W and x as one box each (bench/tui_canvas.py).
    canon = cl.Canonical()
    canon.update(rnn_loop(60))
    kinds = {f"n{i}": sig[0] for i, sig in enumerate(canon.sigs)}
    seen: list[str] = []

    def capture(dot: str):
        seen.append(dot)
        return fake_layout(dot)

    def leaf_degrees(dot: str) -> dict[str, int]:
        degree: dict[str, int] = {}
        for tail, head in re.findall(r"^(\w+) -> (\w+)", dot, re.M):
            for name in (tail, head):
                if kinds.get(name.split("_")[0]) in ("param", "leaf"):
                    degree[name] = degree.get(name, 0) + 1
        return degree

    cl.compute_entry(canon.sigs, cl.Collapse(), False, capture, copy_shared=0)
    assert max(leaf_degrees(seen[0]).values()) == 60  # the test sees what it guards against
    entry = cl.compute_entry(canon.sigs, cl.Collapse(), False, capture)
    degrees = leaf_degrees(seen[1])
    assert len(degrees) > 3 * 60 and set(degrees.values()) == {1}
    assert "minlen=0" not in seen[1]  # every weight on the rank above its consumer
    assert entry.scene.missing == 0


def test_parameters_sit_above_the_op_that_uses_them():
    from dyngraph.exporters import layout

    entry, _ = scene_of(shared_weight(3), layout=layout)
    view, boxes = entry.scene.view, entry.scene.boxes
    params = [i for i, n in enumerate(view.nodes) if n.kind == "param"]
    assert params
    for e in view.edges:
        if e.src in params:  # the edge runs down from the weight's bottom into the op's top
            assert boxes[e.src].bottom < boxes[e.dst].top


def test_a_tied_weight_is_one_box():
    """nanoGPT ties its embedding to its output layer: one parameter used twice is one
    node in the pane (copies begin at three uses, where the layout needs them)."""
    entry, _ = scene_of(shared_weight(2))
    labels = [n.label for n in entry.scene.view.nodes]
    assert labels.count("cell.weight_ih") == 1
    weight = labels.index("cell.weight_ih")
    assert sum(e.src == weight for e in entry.scene.view.edges) == 2


def test_a_weight_of_a_module_never_called_is_drawn_in_its_holder():
    """nn.MultiheadAttention uses ``out_proj.weight`` in its own call and never calls
    ``out_proj``: a 24-block GPT drew its 48 out_proj weights and biases as a row of boxes
    above the model. They belong to the attention's box (the module model agrees)."""
    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.out_proj = nn.Linear(4, 4)

        def forward(self, x):
            return x.matmul(self.out_proj.weight.t()).tanh()

    model = nn.Sequential(Attention(), Attention())
    events: list = []
    with dyngraph.subscribe(events.append, stats="none"):
        model(dyngraph.randn(2, 4)).sum().backward()
    graph = next(iter(build_graphs(events)))
    canon = cl.Canonical()
    canon.update(graph)
    prepared = cf.Prepared(canon.sigs)
    where = {sig[2]: scope for sig, scope in zip(canon.sigs, prepared.scopes, strict=True)
             if sig[0] == "param"}
    assert where["0.out_proj.weight"] == ("0#1",) and where["1.out_proj.weight"] == ("1#1",)
