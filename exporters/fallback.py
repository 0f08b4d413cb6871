"""An SVG for any ``DotDoc`` without Graphviz: ``layered_layout`` drawn as Graphviz would.

When Graphviz fails or runs past its time budget, ``fallback_layout_json(doc, note)``
lays the doc out with dyngraph's own layered layout and describes the drawing in the
shape of Graphviz's ``-Tjson`` (xdot drawing operations), so ``SvgTemplate`` paints it like
any other layout: same node ids, tooltips, colours and legend. ``note`` is written at the
top of the picture, so a reader knows which layout drew it and why.

>>> SvgTemplate(doc, fallback_layout_json(doc, "Graphviz took too long"))  # doctest: +SKIP
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from .dot import FONT, DotDoc
from .layered import Spacing, layered_layout

FONT_SIZE = 10.0
CHAR_WIDTH = 5.6  # Helvetica at 10 pt, an average glyph (wide enough for most labels)
LINE_HEIGHT = 12.0
NODE_PAD = (8.0, 4.0)  # label margin inside a box, x and y
SPACING = Spacing(nodesep=14.0, ranksep=22.0, cluster_pad=8.0, cluster_label=14.0)
ARROW = (6.0, 2.2)  # arrowhead length and half width
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_SWATCH = re.compile(r'bgcolor="(#[0-9a-fA-F]{6})" color="(#[0-9a-fA-F]{6})"')
_CELL_TEXT = re.compile(r'<td[^>]*align="left"[^>]*>(.*?)</td>', re.S)


def text_width(text: str, size: float = FONT_SIZE) -> float:
    return len(text) * CHAR_WIDTH * size / FONT_SIZE


def node_size(lines: tuple[str, ...], shape: str) -> tuple[float, float]:
    """A box around ``lines`` (Graphviz's rule: label plus margin, at least 0.3 in tall)."""
    w = max((text_width(line) for line in lines), default=0.0) + 2 * NODE_PAD[0]
    h = max(len(lines) * LINE_HEIGHT + 2 * NODE_PAD[1], 21.6)
    if shape == "ellipse":  # the ellipse around a box is sqrt(2) times as large
        w, h = w * math.sqrt(2), h * 1.2
    return w, h


def _shape_of(layout_attrs: str) -> str:
    m = re.search(r"shape=(\w+)", layout_attrs)
    return m.group(1) if m else "box"


def fallback_layout_json(doc: DotDoc, note: str) -> bytes:
    """Graphviz-style ``-Tjson`` of ``doc`` laid out by ``layered_layout``."""
    chains: list[tuple[str, ...]] = []
    labels: dict[str, str] = {}
    stack: list[tuple[Any, tuple[str, ...]]] = [(doc.root, ())]
    where: dict[str, tuple[str, ...]] = {}
    while stack:
        c, chain = stack.pop()
        if c.name:
            chain = (*chain, c.name)
            labels[c.name] = c.label
        for n in c.nodes:
            where[n.name] = chain
        stack.extend((child, chain) for child in reversed(c.children))
    nodes = doc.nodes()
    shapes = [_shape_of(n.layout) for n in nodes]
    sizes = [node_size(n.lines, s) for n, s in zip(nodes, shapes, strict=True)]
    chains = [where[n.name] for n in nodes]
    lay = layered_layout([(n.name, w, h) for n, (w, h) in zip(nodes, sizes, strict=True)],
                         [(e.tail, e.head) for e in doc.edges], chains, SPACING)
    legend_ops, legend_w, legend_h = _legend(doc.legend)
    lift = legend_h + (8.0 if legend_h else 0.0)  # the legend sits below the drawing
    note_h = 2 * LINE_HEIGHT

    def pt(x: float, y: float) -> list[float]:
        return [round(x, 1), round(y + lift, 1)]

    objects: list[dict[str, Any]] = []
    for name, (x0, y0, x1, y1) in lay.clusters.items():
        corners = [pt(x0, y0), pt(x1, y0), pt(x1, y1), pt(x0, y1)]
        objects.append({"name": name, "bb": "", "_draw_": [
            {"op": "c", "color": "#9e9e9e"}, {"op": "p", "points": corners}],
            "_ldraw_": [_font(), {"op": "c", "color": "#444444"},
                        {"op": "T", "pt": pt(x0 + 6, y1 - LINE_HEIGHT), "align": "l",
                         "text": labels.get(name, name)}]})
    gvid = {}
    for k, (n, shape) in enumerate(zip(nodes, shapes, strict=True)):
        box = lay.nodes[n.name]
        gvid[n.name] = k
        objects.append({"_gvid": k, "name": n.name, "_draw_": [_outline(box, shape, pt)],
                        "_ldraw_": [_font(), *_label(n.lines, box.x, box.y, pt)]})
    edges = []
    labels_by_edge = {(e.tail, e.head): e.label for e in doc.edges}
    for e in lay.edges:
        points = [pt(x, y) for x, y in e.points]
        tip = points[-1]
        draw = [{"op": "L", "points": points[:-1] + [_short(points[-2], tip)]}]
        obj: dict[str, Any] = {"tail": gvid[e.tail], "head": gvid[e.head], "_draw_": draw,
                               "_hdraw_": [{"op": "P", "points": _arrow(points[-2], tip)}]}
        label = labels_by_edge.get((e.tail, e.head), "")
        if label:
            mid = points[len(points) // 2]
            obj["_ldraw_"] = [_font(8.0), {"op": "T", "pt": [mid[0] + 4, mid[1]],
                                           "align": "l", "text": label}]
        edges.append(obj)
    width = max(lay.width, legend_w + 8)
    height = lay.height + lift + note_h
    background = [_font(), {"op": "c", "color": "#7f2704"},
                  {"op": "T", "pt": [4.0, height - LINE_HEIGHT], "align": "l", "text": note}]
    data = {"bb": f"0,0,{width:.1f},{height:.1f}", "_draw_": background,
            "_ldraw_": legend_ops, "objects": objects, "edges": edges}
    return json.dumps(data).encode("utf-8")


def _font(size: float = FONT_SIZE) -> dict[str, Any]:
    return {"op": "F", "size": size, "face": FONT}


def _outline(box: Any, shape: str, pt: Any) -> dict[str, Any]:
    if shape == "ellipse":
        x, y = pt(box.x, box.y)
        return {"op": "E", "rect": [x, y, box.width / 2, box.height / 2]}
    x0, x1 = box.x - box.width / 2, box.x + box.width / 2
    y0, y1 = box.y - box.height / 2, box.y + box.height / 2
    return {"op": "P", "points": [pt(x0, y0), pt(x1, y0), pt(x1, y1), pt(x0, y1)]}


def _label(lines: tuple[str, ...], x: float, y: float, pt: Any) -> list[dict[str, Any]]:
    """One centred text per line, the block centred on (x, y) (baseline 3 pt below)."""
    top = y + (len(lines) - 1) * LINE_HEIGHT / 2
    return [{"op": "T", "pt": pt(x, top - k * LINE_HEIGHT - 3.5), "align": "c", "text": line}
            for k, line in enumerate(lines)]


def _short(a: list[float], b: list[float]) -> list[float]:
    """``b`` moved back towards ``a`` by the arrowhead's length (the line ends at its base)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = math.hypot(dx, dy) or 1.0
    k = min(ARROW[0] / length, 1.0)
    return [round(b[0] - dx * k, 1), round(b[1] - dy * k, 1)]


def _arrow(a: list[float], b: list[float]) -> list[list[float]]:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    base = (b[0] - ux * ARROW[0], b[1] - uy * ARROW[0])
    half = ARROW[1]
    return [[round(base[0] - uy * half, 1), round(base[1] + ux * half, 1)],
            [round(b[0], 1), round(b[1], 1)],
            [round(base[0] + uy * half, 1), round(base[1] - ux * half, 1)]]


def _legend(label: str) -> tuple[list[dict[str, Any]], float, float]:
    """Drawing ops of the legend table ``dot._legend`` writes, bottom-left; (ops, w, h)."""
    if not label:
        return [], 0.0, 0.0
    rows = _ROW.findall(label)
    ops: list[dict[str, Any]] = [_font()]
    height = len(rows) * LINE_HEIGHT + 4
    width = 0.0
    for k, row in enumerate(rows):
        y = height - (k + 1) * LINE_HEIGHT
        texts = _CELL_TEXT.findall(row)
        text = html.unescape(re.sub(r"<[^>]*>", "", texts[-1] if texts else row))
        swatch = _SWATCH.search(row)
        x = 4.0
        if swatch:
            fill, border = swatch.groups()
            ops += [{"op": "C", "color": fill}, {"op": "c", "color": border},
                    {"op": "P", "points": [[x, y], [x + 14, y], [x + 14, y + 9], [x, y + 9]]}]
            x += 20
        ops += [{"op": "c", "color": "#000000"},
                {"op": "T", "pt": [x, y + 1], "align": "l", "text": text}]
        width = max(width, x + text_width(text))
    return ops, width, height
