"""Rendering with graphviz-pure (never a system Graphviz) and escaping of hostile names."""

from __future__ import annotations

import os
import stat
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from dyngraph.exporters import (
    GraphvizError,
    LayoutTimeout,
    build_dot,
    find_dot,
    layout,
    render,
    to_dot,
)
from dyngraph.exporters.render import parse_plain, run_dot
from dyngraph.exporters.svg import SvgTemplate
from exporter_graphs import HOSTILE, GraphMaker, mlp, stack

from dyngraph.errors import UserError

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


@pytest.fixture(autouse=True)
def no_system_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default path must be graphviz-pure: hide any DYNGRAPH_DOT from the environment."""
    monkeypatch.delenv("DYNGRAPH_DOT", raising=False)


def hostile() -> tuple[GraphMaker, dict[str, str]]:
    """A graph whose every name is user data trying to break out; name -> shown text."""
    g = GraphMaker()
    shown = {
        HOSTILE: HOSTILE,
        "back\\slash \\N \\n": "back\\slash \\N \\n",
        "amp &amp; &lt;b&gt; &#60;": "amp &amp; &lt;b&gt; &#60;",
        "new\nline\x01\ttab": "new\\nline\\x01\\ttab",
        "ünïcödé ✓": "ünïcödé ✓",
    }
    module = f"enc.{HOSTILE}"
    x = g.leaf(HOSTILE, (2,))
    w = g.leaf(f"{module}.w", (2,), param=True, grad=0.5)
    h = g.op("mul", [x, w], (2,), module=module, grad=0.1)
    for name in list(shown)[1:]:
        leaf = g.leaf(name, (2,))
        h = g.op("add", [h, leaf], (2,), module=module, grad=0.1)
    g.op("sum", [h], (), grad=1.0)
    return g, shown


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def check_svg(svg: bytes | str, graph_nodes: int, shown: dict[str, str]) -> ET.Element:
    root = ET.fromstring(svg)
    assert not [e for e in root.iter() if e.tag.rsplit("}", 1)[-1].lower() == "script"]
    nodes = [g for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    assert len(nodes) == graph_nodes
    assert all(n.get("id") for n in nodes)
    words = texts(root)
    for text in shown.values():
        assert text in words, f"{text!r} not shown as text"
    return root


def test_hostile_names_in_dot_come_out_as_text_in_graphviz_svg() -> None:
    g, shown = hostile()
    dot = to_dot(g.graph)
    # Inside DOT the name stays in its quoted string: its quote is escaped.
    assert 'label="\\"><script>alert(1)</script>\\n(2,) float32"' in dot
    root = check_svg(render(dot), len(g.graph.nodes), shown)
    cluster_titles = [t.text for c in root.iter(f"{SVG}g") if c.get("class") == "cluster"
                      for t in c.iter(f"{SVG}title")]
    assert cluster_titles  # graphviz-pure titles clusters by name; the label is a text node
    assert f"enc.{HOSTILE}" in texts(root)
    tooltips = [a.get(f"{XLINK}title") for a in root.iter(f"{SVG}a")]
    assert any(t and HOSTILE in t and "shape: (2,) float32" in t for t in tooltips)


def test_hostile_names_in_template_svg_are_text() -> None:
    g, shown = hostile()
    doc = build_dot(g.graph)
    svg = SvgTemplate(doc, run_dot(doc.layout_text(), ["-Tjson"])).render(doc)
    root = check_svg(svg, len(g.graph.nodes), shown)
    titles = {n.get("id"): n.find(f"{SVG}title").text for n in root.iter(f"{SVG}g")
              if n.get("class") == "node"}
    assert titles[f"n{min(g.graph.nodes)}"].startswith(HOSTILE + "\nshape: (2,) float32")
    clusters = {c.find(f"{SVG}title").text for c in root.iter(f"{SVG}g")
                if c.get("class") == "cluster"}
    assert f"enc.{HOSTILE}" in clusters


@pytest.mark.parametrize("depth", [None, 0, 1, 2])
def test_svg_node_count_matches_the_drawing(depth: int | None) -> None:
    graph = stack(3)
    doc = build_dot(graph, depth=depth)
    root = ET.fromstring(render(doc.text()))
    assert sum(1 for e in root.iter(f"{SVG}g") if e.get("class") == "node") == len(doc.nodes())
    ids = {e.get("id") for e in root.iter(f"{SVG}g") if e.get("class") == "node"}
    if depth is None:  # every node drawn; a shared leaf once per use (n1, n1_1, ...)
        assert {i.partition("_")[0] for i in ids} == {f"n{i}" for i in graph.nodes}
    assert ids == {n.name for n in doc.nodes()}
    tmpl = SvgTemplate(doc, run_dot(doc.layout_text(), ["-Tjson"])).render(doc)
    ids2 = {e.get("id") for e in ET.fromstring(tmpl).iter(f"{SVG}g") if e.get("class") == "node"}
    assert ids2 == ids


def test_layout_coordinates_parse_and_point_up() -> None:
    graph = mlp()
    lay = layout(to_dot(graph))
    assert set(lay.nodes) == {f"n{i}" for i in graph.nodes}
    assert lay.width > 0 and lay.height > 0
    for box in lay.nodes.values():
        assert 0 <= box.x <= lay.width and 0 <= box.y <= lay.height
        assert box.width > 10 and box.height > 10  # points, not inches
    # y grows upwards: the input x is drawn above the loss it feeds.
    assert lay.nodes["n1"].y > lay.nodes["n8"].y
    assert lay.nodes["n1"].label == "x\n(2, 3) float32"
    assert {(e.tail, e.head) for e in lay.edges} == {(f"n{e.src}", f"n{e.dst}")
                                                     for e in graph.edges}
    assert all(len(e.points) >= 4 for e in lay.edges)


def test_parse_plain_handles_quotes_html_and_edge_labels() -> None:
    text = (b'graph 1 2 3\n'
            b'node "a b" 1 2 0.5 0.25 "say \\"hi\\"\\nthere" solid box black white\n'
            b'node c 1 1 0.5 0.25 <<b>bold</b>> solid box black white\n'
            b'edge "a b" c 4 1 2 1 1.8 1 1.4 1 1.2 "(2, 3)" 1.1 1.5 solid black\n'
            b'edge c "a b" 4 1 2 1 1.8 1 1.4 1 1.2 solid black\nstop\n')
    lay = parse_plain(text)
    assert (lay.width, lay.height) == (144.0, 216.0)
    assert lay.nodes["a b"].label == 'say "hi"\nthere'
    assert lay.nodes["a b"].x == 72.0 and lay.nodes["a b"].width == 36.0
    assert lay.nodes["c"].label == "<b>bold</b>"
    assert lay.edges[0].label == "(2, 3)" and lay.edges[0].label_pos == (79.2, 108.0)
    assert lay.edges[1].label == "" and lay.edges[1].points[0] == (72.0, 144.0)
    with pytest.raises(GraphvizError):
        parse_plain(b"node x 1\n")


def fake_binary(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_default_binary_is_graphviz_pure_not_dot_on_path(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake_binary(tmp_path, "dot", "exit 3")
    monkeypatch.setenv("PATH", str(tmp_path))
    found = find_dot()
    assert Path(found).name == "graphviz-pure"
    assert Path(found).parent == Path(sys.executable).parent
    assert b"<svg" in render("digraph { a -> b }")


def test_explicit_binary_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = find_dot()
    wrapper = fake_binary(tmp_path, "mydot", f'exec "{real}" "$@"')
    assert find_dot(wrapper) == str(wrapper)
    monkeypatch.setenv("DYNGRAPH_DOT", str(wrapper))
    assert find_dot() == str(wrapper)
    assert layout("digraph { a -> b }").nodes.keys() == {"a", "b"}


def test_missing_binary_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GraphvizError, match="not found") as info:
        render("digraph { a }", dot=tmp_path / "nope")
    assert isinstance(info.value, UserError)
    assert "\n" not in str(info.value)


def test_failing_layout_is_one_clear_error(tmp_path: Path) -> None:
    bad = fake_binary(tmp_path, "bad", 'echo "Error: <stdin>: syntax error in line 1" >&2; exit 1')
    with pytest.raises(GraphvizError, match="syntax error in line 1"):
        render("digraph { a }", dot=bad)
    with pytest.raises(GraphvizError, match="syntax error"):
        render("digraph { a -> }")  # the real binary, given broken DOT


def test_layout_time_budget(tmp_path: Path) -> None:
    slow = fake_binary(tmp_path, "slow", "exec sleep 10")
    with pytest.raises(LayoutTimeout, match="longer than 0.3 s"):
        layout("digraph { a }", dot=slow, timeout=0.3)


def test_unknown_format_is_refused() -> None:
    with pytest.raises(GraphvizError, match="format"):
        render("digraph { a }", "svg; rm -rf /")


def test_environment_is_not_needed_for_tests() -> None:
    assert "DYNGRAPH_DOT" not in os.environ
