"""The debugger's exporter (``e``, ``--export-dir``): iterations reuse layouts."""

from __future__ import annotations

import stat
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import dyngraph

exporters = pytest.importorskip("dyngraph.exporters")

from dyngraph.tui.export import Exporter, export_graph  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def counting_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$DYNGRAPH_DOT: the real binary behind a wrapper that logs each run; the log's path."""
    log = tmp_path / "dot-runs.log"
    wrapper = tmp_path / "counting-dot"
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        f"open({str(log)!r}, 'a').write('run\\n')\n"
        f"sys.exit(subprocess.run([{exporters.find_dot()!r}, *sys.argv[1:]]).returncode)\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DYNGRAPH_DOT", str(wrapper))
    return log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def training_graphs(steps: int = 5) -> list:
    """The forward graphs of ``steps`` iterations of one small, unchanging training step.

    Same values every step: each file has its own colour scale, and gradients that moved
    to another decade would change the legend, and with it the layout.
    """
    rng = np.random.default_rng(0)
    with dyngraph.trace(stats="full") as t:
        w = dyngraph.tensor(rng.normal(0, 1, (3, 4)).astype(np.float32), requires_grad=True)
        x = dyngraph.tensor(rng.normal(0, 1, (2, 3)).astype(np.float32))
        for _ in range(steps):
            (x.matmul(w)).tanh().sum().backward()
            w.grad = None
    return [it.graph for it in t.iterations]


def node_ids(svg: Path) -> set[str]:
    root = ET.parse(svg).getroot()
    return {g.get("id") for g in root.iter(f"{SVG}g") if g.get("class") == "node"}


class Collect:
    """The Exporter's ``done`` callback: remembers each call, lets a test wait for n."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, list[Path], BaseException | None]] = []
        self._cond = threading.Condition()

    def __call__(self, iteration: int, paths: list[Path], error: BaseException | None) -> None:
        with self._cond:
            self.calls.append((iteration, paths, error))
            self._cond.notify_all()

    def wait(self, n: int) -> list[tuple[int, list[Path], BaseException | None]]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.calls) >= n, timeout=60), self.calls
            return list(self.calls)


def test_every_iteration_of_an_unchanging_graph_costs_one_layout(
        tmp_path: Path, counting_dot: Path) -> None:
    graphs = training_graphs(5)
    # ids differ per iteration, the structure does not (the premise of the test)
    assert len({g.structure_key for g in graphs}) == 1
    assert len({frozenset(g.nodes) for g in graphs}) == 5
    done = Collect()
    exporter = Exporter(done)
    try:
        for graph in graphs:
            exporter.submit(graph, tmp_path / "out")
        calls = done.wait(5)
    finally:
        exporter.stop()
    assert [error for _, _, error in calls] == [None] * 5
    assert runs(counting_dot) == 1
    for (iteration, paths, _), graph in zip(calls, graphs, strict=True):
        assert iteration == graph.iteration
        assert [p.name for p in paths] == [f"iter-{iteration:04d}.dot",
                                           f"iter-{iteration:04d}.svg"]
        assert node_ids(paths[1]) == {f"n{i}" for i in graph.nodes}


def test_a_graph_without_nodes_writes_and_announces_nothing(
        tmp_path: Path, counting_dot: Path) -> None:
    from dyngraph.capture.graph import Graph

    graph = training_graphs(1)[0]
    done = Collect()
    exporter = Exporter(done)
    try:
        exporter.submit(Graph(7), tmp_path / "out")
        exporter.submit(graph, tmp_path / "out")
        calls = done.wait(1)
    finally:
        exporter.stop()
    assert [(it, [p.name for p in paths]) for it, paths, _ in calls] == [
        (graph.iteration, ["iter-0001.dot", "iter-0001.svg"])]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["iter-0001.dot",
                                                                   "iter-0001.svg"]


def test_backward_exports_have_their_own_files_and_layouts(
        tmp_path: Path, counting_dot: Path) -> None:
    graphs = training_graphs(3)[1:]
    done = Collect()
    exporter = Exporter(done)
    try:
        for graph in graphs:
            exporter.submit(graph, tmp_path, "forward")
            exporter.submit(graph, tmp_path, "backward")  # the `e` key in the backward view
        calls = done.wait(4)
    finally:
        exporter.stop()
    assert [error for _, _, error in calls] == [None] * 4
    assert runs(counting_dot) == 2  # one forward layout, one backward
    names = sorted(p.name for p in tmp_path.glob("iter-*"))
    assert names == sorted(f"iter-{g.iteration:04d}{kind}.{ext}" for g in graphs
                           for kind in ("", "-backward") for ext in ("dot", "svg"))
    back = tmp_path / f"iter-{graphs[0].iteration:04d}-backward.dot"
    assert "Backward0" in back.read_text()


def test_a_failed_export_is_reported_and_the_next_one_works(
        tmp_path: Path, counting_dot: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = training_graphs(2)[-1]
    done = Collect()
    exporter = Exporter(done)
    try:
        monkeypatch.setenv("DYNGRAPH_DOT", str(tmp_path / "missing-dot"))
        exporter.submit(graph, tmp_path / "out")
        first = done.wait(1)[0]
        monkeypatch.setenv("DYNGRAPH_DOT", str(tmp_path / "counting-dot"))
        exporter.submit(graph, tmp_path / "out")
        second = done.wait(2)[1]
    finally:
        exporter.stop()
    assert isinstance(first[2], exporters.GraphvizError) and first[1] == []
    assert "not found" in str(first[2])
    assert second[2] is None and [p.name for p in second[1]] == [
        f"iter-{graph.iteration:04d}.dot", f"iter-{graph.iteration:04d}.svg"]


def test_export_graph_writes_one_iteration(tmp_path: Path, counting_dot: Path) -> None:
    graph = training_graphs(1)[0]
    paths = export_graph(graph, tmp_path, svg=False)
    assert [p.name for p in paths] == [f"iter-{graph.iteration:04d}.dot"]
    assert runs(counting_dot) == 0  # DOT alone needs no layout
    assert paths[0].read_text() == exporters.to_dot(
        graph, grad_scale=exporters.GradScale.from_graphs([graph]),
        title=f"dyngraph iteration {graph.iteration}")
