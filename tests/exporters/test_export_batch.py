"""Per-iteration export: files, layout reuse, selection, diff, budgets, failures."""

from __future__ import annotations

import os
import stat
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from dyngraph.exporters import GradScale, GraphvizError, export_iterations, find_dot, to_dot
from exporter_graphs import GraphMaker, mlp, stack

import dyngraph
from dyngraph.errors import UserError

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def no_system_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DYNGRAPH_DOT", raising=False)


def four() -> list:
    """Iterations 1, 2 and 4 share a structure; 3 has one more op."""
    return [mlp(1, 1), mlp(2, 100, grad_scale=100.0), mlp(3, 200, extra=True), mlp(4, 300)]


def nodes_of(svg_path: Path) -> dict[str, ET.Element]:
    root = ET.parse(svg_path).getroot()
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("class") == "node"}


def fill_of(node: ET.Element) -> str:
    shapes = {f"{SVG}{tag}" for tag in ("path", "polygon", "ellipse", "rect")}
    return next(e.get("fill") for e in node if e.tag in shapes)


def test_writes_every_iteration_and_reuses_layouts(tmp_path: Path) -> None:
    graphs = four()
    result = export_iterations(graphs, tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["index.html"] + [f"iter-000{i}.{ext}" for i in range(1, 5)
                                      for ext in ("dot", "svg")]
    assert result.layouts == 2
    assert [it.layout_reused for it in result.iterations] == [False, True, False, True]
    assert [it.changed for it in result.iterations] == [True, False, True, True]
    for it, graph in zip(result.iterations, graphs, strict=True):
        nodes = nodes_of(tmp_path / f"iter-{it.index:04d}.svg")
        assert set(nodes) == {f"n{i}" for i in graph.nodes}
        title = nodes[f"n{max(graph.nodes)}"].find(f"{SVG}title").text
        assert title.startswith("sum\nshape: () float32\nat: train.py:14")
    # Same layout, own colours: iteration 2's gradients are 100x larger.
    one, two = nodes_of(tmp_path / "iter-0001.svg"), nodes_of(tmp_path / "iter-0002.svg")
    assert fill_of(one["n4"]) != fill_of(two["n103"])
    scale = GradScale.from_graphs(graphs)
    assert fill_of(two["n103"]) == scale.fill(0.05 * 100)


def test_exported_files_get_the_users_usual_permissions(tmp_path: Path) -> None:
    old_mask = os.umask(0o022)
    try:
        export_iterations(four()[:1], tmp_path)
    finally:
        os.umask(old_mask)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert set(modes.values()) == {0o644}, modes


def test_dot_files_are_to_dot_with_the_batch_scale(tmp_path: Path) -> None:
    graphs = four()
    export_iterations(graphs, tmp_path, formats=["dot"])
    scale = GradScale.from_graphs(graphs)
    for g in graphs:
        expected = to_dot(g, grad_scale=scale, title=f"dyngraph iteration {g.iteration}")
        assert (tmp_path / f"iter-{g.iteration:04d}.dot").read_text() == expected
    assert not list(tmp_path.glob("*.svg"))


def test_selection(tmp_path: Path) -> None:
    graphs = four()
    changed = export_iterations(graphs, tmp_path / "a", iterations="changed", formats=["dot"])
    assert [it.index for it in changed.iterations] == [1, 3, 4]
    some = export_iterations(graphs, tmp_path / "b", iterations="2-3", formats=["dot"])
    assert [it.index for it in some.iterations] == [2, 3]
    assert sorted(p.name for p in (tmp_path / "b").glob("*.dot")) == ["iter-0002.dot",
                                                                     "iter-0003.dot"]
    for bad, message in (("7", "no iteration 7"), ("0", "numbered from 1"),
                         ("1-x", "bad --iterations"), ("3-1", "bad --iterations")):
        with pytest.raises(UserError, match=message):
            export_iterations(graphs, tmp_path / "c", iterations=bad)
    with pytest.raises(UserError, match="format"):
        export_iterations(graphs, tmp_path / "c", formats=["png"])


def test_diff_marks_changes_against_the_previous_iteration(tmp_path: Path) -> None:
    result = export_iterations(four(), tmp_path, diff=True)
    assert [(it.added, it.removed) for it in result.iterations] == [(0, 0), (0, 0), (1, 0),
                                                                    (0, 1)]
    added = nodes_of(tmp_path / "iter-0003.svg")
    marked = [n for n in added.values() if 'stroke="#1a9641"' in ET.tostring(n, "unicode")]
    assert [m.find(f"{SVG}title").text.splitlines()[0] for m in marked] == ["mul"]
    ghosts = [k for k in nodes_of(tmp_path / "iter-0004.svg") if k.startswith("x")]
    assert ghosts == ["x205"]
    assert result.layouts == 3  # 1 and 2 share; 3 (added) and 4 (with a ghost) do not


def test_failing_graphviz_falls_back_to_the_layered_layout(tmp_path: Path) -> None:
    bad = tmp_path / "bad-dot"
    bad.write_text("#!/bin/sh\ncat > /dev/null\necho 'Error: out of luck' >&2\nexit 1\n")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    result = export_iterations(four(), tmp_path / "out", dot=bad)
    for it in result.iterations:
        assert "out of luck" in it.layout_note
        svg = (tmp_path / "out" / f"iter-{it.index:04d}.svg").read_text()
        root = ET.fromstring(svg)  # parses
        assert "drawn by dyngraph's layered layout" in svg
        drawn = {e.get("id") for e in root.iter(f"{SVG}g") if e.get("class") == "node"}
        assert {i.partition("_")[0] for i in drawn} == {
            f"n{i}" for i in four()[it.index - 1].nodes}
    with pytest.raises(GraphvizError, match="not found"):
        export_iterations(four(), tmp_path / "new", dot=tmp_path / "missing")
    assert not (tmp_path / "new").exists()


def test_big_graphs_collapse_to_fit(tmp_path: Path) -> None:
    graph = stack(6)
    result = export_iterations([graph], tmp_path, max_nodes=10)
    info = result.iterations[0]
    assert info.collapsed and info.depth == 2 and info.drawn <= 10 < info.nodes
    nodes = nodes_of(tmp_path / "iter-0001.svg")
    assert "m_encoder_layers_5" in nodes and len(nodes) == info.drawn


def test_layout_budget_hands_over_to_the_layered_layout(tmp_path: Path) -> None:
    slow = tmp_path / "slow-dot"  # a "dot" that never answers
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    t0 = time.monotonic()
    result = export_iterations([stack(2)], tmp_path / "out", dot=slow, budget=1.0)
    assert time.monotonic() - t0 < 10
    info = result.iterations[0]
    assert "took longer than 1 s" in info.layout_note and not info.collapsed
    svg = (tmp_path / "out" / "iter-0001.svg").read_text()
    assert "Graphviz took longer than 1 s" in svg
    assert len(nodes_of(tmp_path / "out" / "iter-0001.svg")) == info.drawn


def test_index_html_lists_iterations_and_marks_changes(tmp_path: Path) -> None:
    export_iterations(four(), tmp_path)
    page = (tmp_path / "index.html").read_text()
    from dyngraph.viewer.page import read_parts

    data = read_parts(page)["meta"]["iterations"]
    assert [d["index"] for d in data] == [1, 2, 3, 4]
    # (as the terminal marks them: the first has nothing before it to change from)
    assert [d["changed"] for d in data] == [False, False, True, True]
    assert data[0]["files"] == ["iter-0001.dot", "iter-0001.svg"]
    assert '<div id="dg-root"></div>' in page  # the viewer page (tests/viewer drive it)
    assert '<a href="iter-0001.svg">' in page  # and the files, for a browser without scripts


def test_index_html_escapes_what_it_embeds() -> None:
    from dyngraph.exporters.batch import IterationInfo
    from dyngraph.exporters.html import index_html

    from dyngraph.capture.graph import Graph, GraphNode

    evil = IterationInfo(1, "</script><script>alert(1)</script>", True, 3,
                         files=['"><img src=x onerror=alert(1)>.svg'])
    graph = Graph(1, {1: GraphNode(1, "param", name="</script><script>alert(2)</script>",
                                   module="<img src=x onerror=alert(3)>")})
    page = index_html([evil], [graph])
    assert "<script>alert(" not in page and "<img" not in page
    # the config block's, the parts' (meta, one structure, one iteration's values), the code's
    assert page.count("</script>") == 5


def test_exports_a_recorded_trace(tmp_path: Path) -> None:
    with dyngraph.trace(stats="full") as t:
        w = dyngraph.randn(3, 2, requires_grad=True)
        for i in range(3):
            x = dyngraph.randn(2 + i % 2, 3)
            (x.matmul(w)).tanh().sum().backward()
    result = export_iterations(t, tmp_path, iterations="all")
    assert [it.index for it in result.iterations] == [1, 2, 3]
    assert [it.changed for it in result.iterations] == [True, True, True]
    assert result.layouts == 2  # iterations 1 and 3 have the same shapes
    for it in result.iterations:
        graph = t.iterations[it.index - 1].graph
        assert len(nodes_of(tmp_path / f"iter-{it.index:04d}.svg")) == len(graph.nodes)


def _nan(graph, op: str = "relu"):
    node = next(n for n in graph.nodes.values() if n.op == op)
    node.summary = node.summary.__class__(node.shape, "float32", norm=float("nan"), nan=1)
    return graph


def _sequence(kind: str) -> list:
    if kind == "mlp":
        return [mlp(1, 1), mlp(2, 100, grad_scale=100.0), mlp(3, 200, extra=True),
                mlp(4, 300), _nan(mlp(5, 400)), mlp(6, 500, hidden=5), mlp(7, 600, hidden=5)]
    if kind == "stack":
        return [stack(3, i, 1000 * i) for i in range(1, 4)] + [stack(2, 4, 4000)]
    # no gradients at all: the legend comes and goes with NaN
    return [mlp(1, 1, grads=False), _nan(mlp(2, 100, grads=False)), mlp(3, 200, grads=False),
            _nan(mlp(4, 300, grads=False))]


@pytest.mark.parametrize("graphs, options", [
    ("mlp", {}), ("mlp", {"diff": True}), ("mlp", {"graph_kind": "backward"}),
    ("mlp", {"show_shapes": True, "formats": ["dot"]}), ("stack", {"depth": 1}),
    ("stack", {"fold_repeats": True, "diff": True}), ("nograd", {}),
])
def test_fast_path_writes_what_the_model_writes(graphs: str, options: dict, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from dyngraph.exporters import batch

    calls = []
    real = batch.FastPath.render
    monkeypatch.setattr(batch.FastPath, "render",
                        lambda self, *a, **kw: calls.append(1) or real(self, *a, **kw))
    fast = export_iterations(_sequence(graphs), tmp_path / "fast", **options)
    assert calls  # some iterations did take the fast path
    # Make every signature unique: no iteration can take the fast path.
    monkeypatch.setattr(batch, "signature", lambda *args, **kw: object())
    slow = export_iterations(_sequence(graphs), tmp_path / "slow", **options)
    assert [p.name for p in fast.files] == [p.name for p in slow.files]
    for path in fast.files:
        if path.name != "index.html":
            assert path.read_text() == (tmp_path / "slow" / path.name).read_text(), path.name
    assert [it.layout_reused for it in fast.iterations] == [
        it.layout_reused for it in slow.iterations]


def test_only_recent_layouts_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dyngraph.exporters import batch

    monkeypatch.setattr(batch, "KEEP_LAYOUTS", 1)
    result = export_iterations(four(), tmp_path)
    # 1 and 2 share a layout; 3 pushes it out, so 4 is laid out again.
    assert result.layouts == 3
    assert [it.layout_reused for it in result.iterations] == [False, True, False, False]


def test_a_file_trace_exports_its_iterations_own_graphs(tmp_path: Path) -> None:
    """Each iteration's DOT is its graph's (as exporting the graphs gives); ``changed``
    picks the iterations whose structure differs from the one before."""
    path = tmp_path / "run.dgtrace"
    with dyngraph.record(path, stats="cheap"):
        w = dyngraph.randn(3, 2, requires_grad=True)
        for i in range(5):
            x = dyngraph.randn(1 + (i // 2) % 2, 3)  # batch 1, 1, 2, 2, 1
            x.matmul(w).relu().sum().backward()
    trace = dyngraph.read_trace(path)
    out, same = tmp_path / "all", tmp_path / "graphs"
    export_iterations(trace, out, formats=["dot"], iterations="all")
    export_iterations([it.graph for it in dyngraph.read_trace(path).iterations], same,
                      formats=["dot"], iterations="all")
    for it in trace.iterations:
        name = f"iter-{it.index:04d}.dot"
        assert (out / name).read_text() == (same / name).read_text()
        assert (out / name).read_text().count(' id="n') == len(it.graph.nodes)
    keys = [it.structure_key for it in trace.iterations]
    changed = export_iterations(dyngraph.read_trace(path), tmp_path / "changed",
                                formats=["dot"], iterations="changed")
    expected = [it.index for k, it in enumerate(trace.iterations)
                if k == 0 or keys[k - 1] != keys[k]]
    assert [info.index for info in changed.iterations] == expected
    assert expected == [1, 3, 5]


# -- IterationExporter: one iteration per call, layouts kept between calls -------------------

def counting_dot(tmp_path: Path) -> tuple[Path, Path]:
    """A "dot" that logs one line per run into a file, then runs the real one."""
    log = tmp_path / "dot-runs.log"
    wrapper = tmp_path / "counting-dot"
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        f"open({str(log)!r}, 'a').write('run\\n')\n"
        f"sys.exit(subprocess.run([{find_dot()!r}, *sys.argv[1:]]).returncode)\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper, log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_iteration_exporter_lays_out_once_per_structure(tmp_path: Path) -> None:
    from dyngraph.exporters import IterationExporter

    dot, log = counting_dot(tmp_path)
    out = tmp_path / "out"
    exporter = IterationExporter(out, dot=dot)
    graphs = [mlp(i, 100 * i) for i in range(1, 6)]
    for graph in graphs:
        paths = exporter.write(graph)
        assert [p.name for p in paths] == [f"iter-{graph.iteration:04d}.{ext}"
                                           for ext in ("dot", "svg")]
    assert runs(log) == exporter.layouts == 1
    for graph in graphs:  # own ids in every file, though drawn from the first one's layout
        assert set(nodes_of(out / f"iter-{graph.iteration:04d}.svg")) == {
            f"n{i}" for i in graph.nodes}
    assert exporter.last is not None and exporter.last.layout_reused
    # A new structure is laid out; the old one is still known when it comes back.
    exporter.write(mlp(6, 600, extra=True))
    assert runs(log) == 2 and not exporter.last.layout_reused
    assert len(nodes_of(out / "iter-0006.svg")) == len(mlp(extra=True).nodes)
    exporter.write(mlp(7, 700))
    assert runs(log) == 2 and exporter.last.layout_reused
    assert sorted(p.name for p in out.iterdir()) == [
        f"iter-000{i}.{ext}" for i in range(1, 8) for ext in ("dot", "svg")]


@pytest.mark.parametrize("kind, options", [
    ("mlp", {}), ("mlp", {"graph_kind": "backward"}), ("stack", {"depth": 1}),
    ("stack", {"fold_repeats": True, "show_shapes": True}), ("nograd", {}),
])
def test_iteration_exporter_writes_what_a_batch_of_one_writes(
        kind: str, options: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dyngraph.exporters import IterationExporter, batch

    calls = []
    real = batch.FastPath.render
    monkeypatch.setattr(batch.FastPath, "render",
                        lambda self, *a, **kw: calls.append(1) or real(self, *a, **kw))
    # Each file has its own colour scale: the same bytes as exporting that graph alone,
    # whether it was drawn afresh, from a kept layout or on the fast path.
    exporter = IterationExporter(tmp_path / "inc", **options)
    for graph in _sequence(kind):
        written = exporter.write(graph)
        alone = tmp_path / f"alone-{graph.iteration}"
        export_iterations([graph], alone, index=False, **options)
        assert [p.name for p in written] == sorted(p.name for p in alone.iterdir())
        for path in written:
            assert path.read_text() == (alone / path.name).read_text(), path.name
    assert exporter.layouts < len(_sequence(kind))
    assert calls  # some iterations did take the fast path (a batch of one never does)


def test_iteration_exporter_files_are_atomic_and_readable(tmp_path: Path) -> None:
    from dyngraph.exporters import IterationExporter

    old_mask = os.umask(0o022)
    try:
        exporter = IterationExporter(tmp_path / "out", formats=["dot"], suffix="-backward",
                                     graph_kind="backward")
        assert [p.name for p in exporter.write(mlp(3))] == ["iter-0003-backward.dot"]
    finally:
        os.umask(old_mask)
    assert [(p.name, stat.S_IMODE(p.stat().st_mode)) for p in (tmp_path / "out").iterdir()] \
        == [("iter-0003-backward.dot", 0o644)]  # no temporary file left over
    assert exporter.write(GraphMaker(9).graph) == []  # nothing to draw, nothing written


def test_iteration_exporter_failures(tmp_path: Path) -> None:
    from dyngraph.exporters import IterationExporter

    with pytest.raises(GraphvizError, match="not found"):
        IterationExporter(tmp_path / "a", dot=tmp_path / "missing")
    with pytest.raises(UserError, match="unknown graph kind"):
        IterationExporter(tmp_path / "a", graph_kind="sideways")
    bad = tmp_path / "bad-dot"
    bad.write_text("#!/bin/sh\ncat > /dev/null\necho 'Error: out of luck' >&2\nexit 1\n")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    exporter = IterationExporter(tmp_path / "out", dot=bad)
    written = exporter.write(mlp(1))  # drawn all the same, by dyngraph's own layout
    assert [p.name for p in written] == ["iter-0001.dot", "iter-0001.svg"]
    assert exporter.last is not None and "out of luck" in exporter.last.layout_note
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(UserError, match="cannot create"):
        IterationExporter(blocked / "out", formats=["dot"]).write(mlp(1))
