"""SVG from a cached Graphviz layout, re-styled for each iteration.

Graphviz lays a ``DotDoc`` out once (``-Tjson``: every node's, edge's and cluster's drawing
operations with coordinates). ``SvgTemplate`` keeps that geometry; ``render(doc)`` then
writes the SVG of *any* doc with the same ``layout_key()`` using that doc's own colours,
tooltips and ids, in pure Python. That is how a hundred iterations of an unchanging graph
cost one layout: only the styles differ between them.

Output follows Graphviz's own SVG (one ``<g class="node" id="n12">`` per node with a
``<title>`` tooltip), and every piece of text goes through ``escape.xml_text``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from .dot import DotDoc, DotNode
from .escape import clean, xml_text
from .render import GraphvizError

_ANCHOR = {"l": "start", "c": "middle", "r": "end"}
# Graphviz measures labels with Helvetica's PostScript metrics ("hello world" at 10 pt:
# 47.8, Helvetica's own width). The fonts listed after Helvetica share its metrics (Arial,
# Liberation Sans, Nimbus Sans); a system with none of them draws DejaVu Sans, wider, for
# which the layout made room (``dot.LAYOUT_FONT_SCALE``: texts measured at 1.2 times their
# size, drawn here at their own).
_SANS = "Helvetica,Arial,'Liberation Sans','Nimbus Sans','Nimbus Sans L',sans-serif"
_FAMILY = {
    "Helvetica": _SANS, "Arial": _SANS,
    "Times-Roman": "Times,'Liberation Serif','Nimbus Roman',serif",
    "Times": "Times,'Liberation Serif','Nimbus Roman',serif",
    "Courier": "Courier,'Liberation Mono','Nimbus Mono PS',monospace",
}


def _f(v: float) -> str:
    """A coordinate: a tenth of a point is finer than any screen shows."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _color(c: str) -> tuple[str, str]:
    """An SVG colour and opacity attribute text from Graphviz's ``#rrggbbaa``."""
    if len(c) == 9 and c.startswith("#"):
        alpha = int(c[7:], 16)
        if alpha == 0:
            return "none", ""
        if alpha != 255:
            return c[:7], f' fill-opacity="{alpha / 255:.3f}"'
        return c[:7], ""
    return c, ""


def _pts(points: list[list[float]]) -> str:
    return " ".join(f"{_f(x)},{_f(-y)}" for x, y in points)


def _shape(op: dict, node: bool = False) -> tuple[str, bool] | None:
    """(SVG element without its closing and paint attributes, is it a closed shape)."""
    kind = op["op"]
    if kind in ("P", "p"):
        pts = op["points"]
        return f'<polygon points="{_pts(pts)}"', True  # SVG closes polygons itself
    if kind in ("B", "b"):
        pts = op["points"]
        if node and len(pts) == 25:  # Graphviz's rounded box: a fifth of the bytes as a rect
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            x, y, w, h = min(xs), -max(ys), max(xs) - min(xs), max(ys) - min(ys)
            return (f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" '
                    f'rx="{_f(min(w, h) / 4)}"'), True
        d = f"M{_f(pts[0][0])},{_f(-pts[0][1])}C" + _pts(pts[1:])
        return f'<path d="{d}"', True
    if kind in ("E", "e"):
        x, y, rx, ry = op["rect"]
        return f'<ellipse cx="{_f(x)}" cy="{_f(-y)}" rx="{_f(rx)}" ry="{_f(ry)}"', True
    if kind == "L":
        return f'<polyline points="{_pts(op["points"])}"', False
    return None


# Inherited from the root <g>: what most texts use, so they need not repeat it.
_TEXT_DEFAULTS = f' text-anchor="middle" font-family="{_SANS}" font-size="10"'


def _text_open(op: dict, size: float, face: str, weight: str, words: str) -> str:
    x, y = op["pt"]
    out = f'<text x="{_f(x)}" y="{_f(-y)}"'
    anchor = _ANCHOR.get(op["align"], "middle")
    if anchor != "middle":
        out += f' text-anchor="{anchor}"'
    family = _FAMILY.get(face, xml_text(face))
    if family != _SANS:
        out += f' font-family="{family}"'
    if size != 10:
        out += f' font-size="{_f(size)}"'
    if words != words.strip() or "  " in words:
        out += ' xml:space="preserve"'
    return out + weight


class _Font:
    """Font state while walking xdot ops (``F`` sets size and face, ``t`` bold/italic).

    ``scale``: how much larger than drawn the layout measured its texts (see ``_SANS``).
    """

    def __init__(self, scale: float = 1.0) -> None:
        self.size, self.face, self.weight = 14.0, "Times-Roman", ""
        self.scale = scale

    def update(self, op: dict) -> bool:
        kind = op["op"]
        if kind == "F":
            self.size, self.face = round(op["size"] / self.scale, 2), op["face"]
        elif kind == "t":
            self.weight = ' font-weight="bold"' if int(op.get("fontchar", 0)) & 1 else ""
        else:
            return False
        return True


def _texts(ops: list[dict], lines: Sequence[str] = (), scale: float = 1.0) -> list[str]:
    """Pairs of ``<text ...`` opening (paint left out) and ``>content</text>``.

    The words come from ``lines`` (the label we wrote) when Graphviz drew one text per
    line: graphviz-pure's JSON doubles the backslashes of the text it reports.
    """
    out: list[str] = []
    font = _Font(scale)
    texts = [op for op in ops if op["op"] == "T"]
    words = [clean(line) for line in lines] if len(lines) == len(texts) else \
        [op["text"] for op in texts]
    k = 0
    for op in ops:
        if not font.update(op) and op["op"] == "T":
            out.append(_text_open(op, font.size, font.face, font.weight, words[k]))
            out.append(f">{xml_text(words[k])}</text>\n")
            k += 1
    return out


def _static(ops: list[dict], label: str | None = None, scale: float = 1.0) -> str:
    """Draw ops with the colours Graphviz chose (clusters, the legend). ``label``: the
    words of a one-text label (see ``_texts`` for why)."""
    if label is not None and sum(1 for op in ops if op["op"] == "T") != 1:
        label = None
    out: list[str] = []
    pen, fill, opacity, width = "black", "none", "", ""
    font = _Font(scale)
    for op in ops:
        kind = op["op"]
        if font.update(op):
            continue
        if kind == "c":
            pen, _ = _color(op["color"])
        elif kind == "C":
            fill, opacity = _color(op["color"])
        elif kind == "S":
            style = op["style"]
            if style.startswith("setlinewidth("):
                width = f' stroke-width="{style[13:-1]}"'
        elif kind == "T":
            words = clean(label) if label is not None else op["text"]
            out.append(f'{_text_open(op, font.size, font.face, font.weight, words)} '
                       f'fill="{pen}">{xml_text(words)}</text>\n')
        else:
            shape = _shape(op)
            if shape is not None:
                el, closed = shape
                filled = closed and kind.isupper()
                paint = f'{fill}"{opacity}' if filled else 'none"'
                out.append(f'{el} fill="{paint} stroke="{pen}"{width}/>\n')
    return "".join(out)


@dataclass(slots=True)
class _NodeGeom:
    shapes: list[tuple[str, bool]]
    texts: list[str]
    bbox: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # SVG x0, y0, x1, y1


def _bbox(ops: list[dict]) -> tuple[float, float, float, float]:
    """The box around a node's drawing, in SVG coordinates (y down)."""
    xs: list[float] = []
    ys: list[float] = []
    for op in ops:
        if "points" in op:
            xs += [p[0] for p in op["points"]]
            ys += [-p[1] for p in op["points"]]
        elif "rect" in op:
            x, y, rx, ry = op["rect"]
            xs += [x - rx, x + rx]
            ys += [-y - ry, -y + ry]
    return (min(xs), min(ys), max(xs), max(ys)) if xs else (0.0, 0.0, 0.0, 0.0)


# rsvg-convert (and other rasterisers) refuse a picture wider or taller than 32,767 px;
# at 96 px to the inch a point is 4/3 px. A bigger drawing keeps its viewBox and is
# given a smaller size: a viewer zooms in, nothing is refused.
MAX_PT = 32_767 * 72 / 96


@dataclass(slots=True)
class _EdgeGeom:
    line: list[str]
    head: list[str]
    texts: list[str]


class SvgTemplate:
    """The geometry of one layout; ``render(doc)`` paints any doc with the same layout key."""

    def __init__(self, doc: DotDoc, layout_json: bytes) -> None:
        try:
            data = json.loads(layout_json)
            self._build(doc, data)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise GraphvizError(f"could not read Graphviz's layout: {exc!r}") from None
        self.key = doc.layout_key()

    def _build(self, doc: DotDoc, data: dict) -> None:
        # The layout measured texts at the graph's fontsize over the drawn 10 pt.
        scale = float(data.get("fontsize", 10)) / 10
        llx, lly, urx, ury = (float(v) for v in data["bb"].split(","))
        self.width, self.height = urx + 8, ury + 8
        self.background = _static(data.get("_draw_", []), scale=scale)
        self.legend = _static(data.get("_ldraw_", []), scale=scale)
        nodes = doc.nodes()
        index = {n.name: i for i, n in enumerate(nodes)}
        cluster_labels = {}
        stack = [doc.root]
        while stack:
            c = stack.pop()
            cluster_labels[c.name] = c.label
            stack.extend(c.children)
        self.nodes: list[_NodeGeom | None] = [None] * len(index)
        clusters: list[str] = []
        names: dict[int, str] = {}
        for obj in data.get("objects", []):
            name = obj.get("name", "")
            if "nodes" in obj or "bb" in obj or name.startswith("cluster"):
                if name.startswith("cluster"):
                    clusters.append(self._cluster(obj, cluster_labels.get(name), scale))
                continue
            names[obj["_gvid"]] = name
            i = index.get(name)
            if i is None:
                continue
            shapes = [s for op in obj.get("_draw_", []) if (s := _shape(op, True)) is not None]
            self.nodes[i] = _NodeGeom(shapes, _texts(obj.get("_ldraw_", []), nodes[i].lines,
                                                           scale),
                                      _bbox(obj.get("_draw_", [])))
        if any(g is None for g in self.nodes):
            raise KeyError("a node is missing from the layout")
        self._node_fmts = [_node_format(g) for g in self.nodes]  # type: ignore[arg-type]
        self.clusters = "".join(clusters)
        edge_pos = {(e.tail, e.head): j for j, e in enumerate(doc.edges)}
        self.edges: list[_EdgeGeom | None] = [None] * len(doc.edges)
        for obj in data.get("edges", []):
            j = edge_pos.get((names[obj["tail"]], names[obj["head"]]))
            if j is None:
                continue
            line = [s[0] for s in map(_shape, obj.get("_draw_", [])) if s is not None]
            head = [s[0] for s in map(_shape, obj.get("_hdraw_", [])) if s is not None]
            head += [s[0] for s in map(_shape, obj.get("_tdraw_", [])) if s is not None]
            label = doc.edges[j].label
            self.edges[j] = _EdgeGeom(line, head, _texts(obj.get("_ldraw_", []),
                                                         (label,) if label else (), scale))
        self._edge_fmts = [_edge_format(g) for g in self.edges]

    @staticmethod
    def _cluster(obj: dict, label: str | None, scale: float) -> str:
        name = obj["name"]
        body = (_static(obj.get("_draw_", []), scale=scale)
                + _static(obj.get("_ldraw_", []), label, scale))
        label = label if label is not None else obj.get("label", name)
        return (f'<g id="{xml_text(obj.get("id", name))}" class="cluster">\n'
                f"<title>{xml_text(clean(label))}</title>\n{body}</g>\n")

    def render(self, doc: DotDoc, title: str = "") -> str:
        """The SVG of ``doc`` (whose ``layout_key()`` must equal this template's)."""
        edges = [fmt.format(e.tail, e.head, e.style.svg_stroke, e.style.color)
                 for fmt, e in zip(self._edge_fmts, doc.edges, strict=True) if fmt]
        nodes = [fmt.format(n.name, n.tooltip_xml, n.style.svg_fill, n.style.svg_stroke,
                            n.style.fontcolor)
                 for fmt, n in zip(self._node_fmts, doc.nodes(), strict=True)]
        for k, n in enumerate(doc.nodes()):
            if n.strip or n.link:
                nodes[k] = self._extras(nodes[k], n, self.nodes[k])
        return self.assemble(title or doc.title, edges, nodes)

    @staticmethod
    def _extras(text: str, node: DotNode, geom: _NodeGeom | None) -> str:
        """A run's gradient strip along the bottom of its box; a link around a box that
        opens a picture of its own."""
        if node.strip and geom is not None:
            x0, _, x1, y1 = geom.bbox
            cells = len(node.strip)
            width = max(x1 - x0 - 8, 1.0) / cells
            rects = "".join(
                f'<rect x="{_f(x0 + 4 + k * width)}" y="{_f(y1 - 9)}" width="{_f(width)}" '
                f'height="6" fill="{fill}" stroke="none"/>\n'
                for k, fill in enumerate(node.strip) if fill)
            text = text[:-len("</g>\n")] + rects + "</g>\n"
        if node.link:
            href = xml_text(node.link)
            text = f'<a href="{href}" xlink:href="{href}">\n{text}</a>\n'
        return text

    def assemble(self, title: str, edges: list[str], nodes: list[str]) -> str:
        """The whole SVG around already formatted edge and node groups."""
        w, h = _f(self.width), _f(self.height)
        fit = min(1.0, MAX_PT / max(self.width, 1.0), MAX_PT / max(self.height, 1.0))
        sw, sh = (w, h) if fit == 1.0 else (_f(self.width * fit), _f(self.height * fit))
        return "".join([
            '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
            f'<svg width="{sw}pt" height="{sh}pt" viewBox="0.00 0.00 {w} {h}" '
            'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n',
            f"<title>{xml_text(title)}</title>\n",
            f'<g id="graph0" class="graph" transform="translate(4 {_f(self.height - 4)})"'
            f"{_TEXT_DEFAULTS}>\n",
            self.background, self.clusters, *edges, *nodes, self.legend, "</g>\n</svg>\n",
        ])


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _node_format(geom: _NodeGeom) -> str:
    """``str.format`` text of one node: {0} name, {1} tooltip, {2} fill, {3} stroke
    attributes, {4} font colour. Names are ours ([A-Za-z0-9_]): nothing to escape."""
    parts = ['<g id="{0}" class="node">\n<title>{1}</title>\n']
    for el, closed in geom.shapes:
        parts.append(f'{_braces(el)} fill="{{2}}"{{3}}/>\n' if closed
                     else f'{_braces(el)} fill="none"{{3}}/>\n')
    texts = geom.texts
    for k in range(0, len(texts), 2):
        parts.append(f'{_braces(texts[k])} fill="{{4}}"{_braces(texts[k + 1])}')
    parts.append("</g>\n")
    return "".join(parts)


def _edge_format(geom: _EdgeGeom | None) -> str:
    """{0} tail, {1} head, {2} stroke attributes, {3} colour; "" for an edge not drawn."""
    if geom is None:
        return ""
    parts = ['<g id="e_{0}_{1}" class="edge">\n']
    parts.extend(f'{_braces(el)} fill="none"{{2}}/>\n' for el in geom.line)
    parts.extend(f'{_braces(el)} fill="{{3}}" stroke="{{3}}"/>\n' for el in geom.head)
    texts = geom.texts
    for k in range(0, len(texts), 2):
        parts.append(f'{_braces(texts[k])} fill="{{3}}"{_braces(texts[k + 1])}')
    parts.append("</g>\n")
    return "".join(parts)
