"""Issue 11: a name with a newline cannot add a line of its own to an SVG tooltip. Issue 23:
a name with a character a browser draws as nothing shows it, escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from dyngraph.exporters import build_dot, render
from dyngraph.exporters.render import run_dot
from dyngraph.exporters.svg import SvgTemplate
from exporter_graphs import GraphMaker

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


def spoofing_graph() -> GraphMaker:
    g = GraphMaker()
    x = g.leaf("x\ngrad: all fine\x1b[2J", (2,))
    w = g.leaf("enc\u200b.weight\u202e", (2,))
    h = g.op("mul", [x, w], (2,), module="enc\nat: evil.py:1", grad=0.1)
    g.op("sum", [h], (), grad=1.0)
    return g


def tooltip_lines(tooltips: list[str]) -> list[str]:
    return [line for tip in tooltips for line in tip.split("\n")]


def check(tooltips: list[str]) -> None:
    lines = tooltip_lines(tooltips)
    assert "grad: all fine" not in lines and "at: evil.py:1" not in lines
    assert "x\\ngrad: all fine\\x1b[2J" in lines  # the name, on its one line
    assert "module: enc\\nat: evil.py:1" in lines
    assert any("enc\\u200b.weight\\u202e" in line for line in lines)
    assert not any(re.search("[\x00-\x08\x0b-\x1f\x7f\u200b\u202e]", tip) for tip in tooltips)


def test_template_svg_tooltips_and_cluster_titles() -> None:
    doc = build_dot(spoofing_graph().graph)
    svg = SvgTemplate(doc, run_dot(doc.layout_text(), ["-Tjson"])).render(doc)
    root = ET.fromstring(svg)
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    check(titles)
    assert "enc\\nat: evil.py:1" in titles  # the cluster's title: one line


def test_graphviz_svg_tooltips() -> None:
    root = ET.fromstring(render(build_dot(spoofing_graph().graph).text()))
    check([a.get(f"{XLINK}title") or "" for a in root.iter(f"{SVG}a")])
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert "x\\ngrad: all fine\\x1b[2J" in texts  # the label, one line too
    assert "enc\\u200b.weight\\u202e" in texts
