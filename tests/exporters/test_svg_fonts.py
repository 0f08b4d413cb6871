"""SVG labels fit their boxes in the font Linux actually draws, and the legend's scale
covers the finite gradients only."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from dyngraph.exporters import GradScale, export_iterations, to_dot
from exporter_graphs import GraphMaker, stack

from dyngraph.capture.events import Summary

SVG = "{http://www.w3.org/2000/svg}"
# DejaVu Sans advance widths (units per em: 2048), the font a Linux browser or librsvg
# draws when neither Helvetica nor a metric twin (Arial, Liberation Sans) is installed.
DEJAVU = {**dict.fromkeys("0123456789", 1303), " ": 651, "(": 799, ")": 799, ",": 651,
          ".": 651, "_": 1024, "×": 1716, "a": 1255, "b": 1300, "c": 1126, "d": 1300,
          "e": 1260, "f": 721, "g": 1300, "h": 1298, "i": 569, "j": 569, "k": 1186,
          "l": 569, "m": 1995, "n": 1298, "o": 1253, "p": 1300, "q": 1300, "r": 842,
          "s": 1067, "t": 803, "u": 1298, "v": 1212, "w": 1675, "x": 1212, "y": 1212,
          "z": 1075}


def dejavu_width(text: str, size: float = 10.0) -> float:
    return sum(DEJAVU.get(c, 1400) for c in text) * size / 2048


def boxes(svg: Path):
    """(box width, the label's lines) of every rectangular node."""
    root = ET.parse(svg).getroot()
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "node":
            continue
        rect = g.find(f"{SVG}rect")
        if rect is None:
            continue
        lines = [t.text or "" for t in g.iter(f"{SVG}text")]
        yield float(rect.get("width")), lines


def test_labels_fit_their_boxes_in_dejavu_sans(tmp_path: Path) -> None:
    g = stack(layers=12)  # long module paths: encoder.layers.11.attn.wq
    export_iterations([g], tmp_path)
    svg = tmp_path / "iter-0001.svg"
    checked = 0
    for width, lines in boxes(svg):
        widest = max(dejavu_width(line) for line in lines)
        # Graphviz keeps 0.08 in (5.8 pt) either side of a label; keep at least 4 pt.
        assert widest + 8 <= width, (lines, widest, width)
        checked += 1
    assert checked >= 30
    text = svg.read_text()
    assert "Liberation Sans" in text and 'font-size="10"' in text
    # The .dot file keeps the true font sizes: only the layout measures larger.
    assert "fontsize=10" in (tmp_path / "iter-0001.dot").read_text()


def test_the_legend_covers_finite_gradients_in_whole_decades() -> None:
    """A NaN gradient's summary holds the norm of its finite part, which can be anything
    up to float32's 3e38: it must not stretch the legend over decades no node sits in."""
    g = GraphMaker()
    x = g.leaf("x", (2, 3))
    w = g.leaf("w", (3, 3), param=True, grad=0.02)
    h = g.op("matmul", [x, w], (2, 3), grad=0.5)
    bad = g.op("log", [h], (2, 3), grad=0.3)
    g.op("sum", [bad], (), grad=1.0)
    graph = g.backward()
    graph.nodes[bad].grad = Summary((2, 3), "float32", norm=3.0e37, nan=4)
    scale = GradScale.from_graphs([graph])
    assert scale is not None and (scale.lo, scale.hi) == (-2, 1)
    assert [text for _, text in scale.legend()] == ["1e-2 to 1e-1", "1e-1 to 1e0",
                                                    "1e0 to 1e1"]
    dot = to_dot(graph)
    assert "1e37" not in dot and "1e-2 to 1e-1" in dot
