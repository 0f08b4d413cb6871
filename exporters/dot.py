"""Graph -> DOT text: pure, deterministic, every user string escaped.

>>> from dyngraph.capture.graph import Graph, GraphNode, GraphEdge
>>> g = Graph(1, {1: GraphNode(1, "leaf", name="x", shape=(2,)),
...               2: GraphNode(2, "op", op="relu", shape=(2,), seq=1)}, [GraphEdge(1, 2)])
>>> print(to_dot(g).splitlines()[0])
digraph dyngraph {

Node names are ``n{GraphNode.id}`` (``g{id}`` for the backward half of ``graph_kind="both"``),
collapsed modules ``m_<path>``, removed (ghost) nodes ``x{id}``. Attributes are split in two:
*layout* ones (label, shape, the graph's structure) and *style* ones (colours, pen, tooltip)
that never move a node. ``DotDoc.layout_key()`` hashes only the former with names replaced
by positions, so two iterations with the same key can share one Graphviz layout.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from dyngraph.capture.events import Summary
from dyngraph.capture.graph import Graph, GraphNode, backward_graph

from . import colors
from .colors import GradScale
from .escape import clean, dot_lines, dot_multiline, dot_quote, html_text, xml_text
from .view import (
    OP_KINDS,
    Box,
    VCluster,
    VEdge,
    ViewCache,
    VNode,
    _Shape,
    build_view,
    counted,
    fmt_shape,
)

GRAPH_KINDS = ("forward", "backward", "both")
_KIND_TITLES = {"forward": "forward graph", "backward": "backward graph",
                "both": "forward and backward graphs"}
FONT = "Helvetica"
SHAPES = {"leaf": "ellipse", "module": "box3d"}
_DASH = {"dashed": "5,2", "dotted": "1,5"}
_HEADER = (
    f'  graph [rankdir=TB, fontname="{FONT}", fontsize=10, nodesep=0.2, ranksep=0.3];\n'
    f'  node [shape=box, style="rounded,filled", fontname="{FONT}", fontsize=10, '
    'height=0.3, margin="0.08,0.03", fillcolor="#ffffff", color="#333333", '
    'fontcolor="#000000", penwidth=1];\n'
    f'  edge [color="#555555", arrowsize=0.6, fontname="{FONT}", fontsize=8];\n'
)
CLUSTER_STYLE = 'style="rounded"; color="#9e9e9e"; fontcolor="#444444";'
# Graphviz measures text with Helvetica's PostScript metrics, whatever font the SVG is later
# drawn with. A browser or viewer on Linux without Helvetica (or a metric twin: Arial,
# Liberation Sans, Nimbus Sans) draws DejaVu Sans, up to a fifth wider (``float32`` 1.17,
# ``t`` 1.41, digits 1.14), and labels overflowed their boxes. The layout therefore
# measures every text at this many times its size; the SVG draws it at its own size (the
# graph's ``fontsize`` in the layout tells ``svg.py`` the factor). The .dot files keep the
# true sizes.
LAYOUT_FONT_SCALE = 1.2
_LAYOUT_HEADER = (_HEADER.replace("fontsize=10", f"fontsize={10 * LAYOUT_FONT_SCALE:g}")
                  .replace("fontsize=8", f"fontsize={8 * LAYOUT_FONT_SCALE:g}"))


def _svg_stroke(color: str, style: str, penwidth: str) -> str:
    out = f' stroke="{color}"'
    if "bold" in style and penwidth == "1":
        penwidth = "2"
    if penwidth != "1":
        out += f' stroke-width="{penwidth}"'
    for flag, dash in _DASH.items():
        if flag in style:
            out += f' stroke-dasharray="{dash}"'
    return out


@dataclass(frozen=True, slots=True)
class NodeStyle:
    """How a node is painted (never where it goes). Instances are shared: build them with
    ``NodeStyle.of``; ``dot`` is the DOT text of the non-default attributes."""

    style: str = "rounded,filled"
    fillcolor: str = "#ffffff"
    color: str = "#333333"
    fontcolor: str = "#000000"
    penwidth: str = "1"
    dot: str = ""
    svg_fill: str = "#ffffff"
    svg_stroke: str = ""

    @staticmethod
    @functools.lru_cache(maxsize=1024)
    def of(style: str = "rounded,filled", fillcolor: str = "#ffffff", color: str = "#333333",
           fontcolor: str = "#000000", penwidth: str = "1") -> NodeStyle:
        values = (style, fillcolor, color, fontcolor, penwidth)
        dot = ", ".join(f'{k}="{v}"' for k, v, d in zip(_STYLE_KEYS, values, _NODE_DEFAULTS,
                                                        strict=True) if v != d)
        return NodeStyle(style, fillcolor, color, fontcolor, penwidth, dot,
                         fillcolor if "filled" in style else "none",
                         _svg_stroke(color, style, penwidth))


_STYLE_KEYS = ("style", "fillcolor", "color", "fontcolor", "penwidth")
_NODE_DEFAULTS = ("rounded,filled", "#ffffff", "#333333", "#000000", "1")


@dataclass(frozen=True, slots=True)
class EdgeStyle:
    color: str = "#555555"
    style: str = "solid"
    dot: str = ""
    svg_stroke: str = ' stroke="#555555"'


EDGE_PLAIN = EdgeStyle()
EDGE_GHOST = EdgeStyle(colors.GHOST, "dashed", f'color="{colors.GHOST}", style="dashed"',
                       _svg_stroke(colors.GHOST, "dashed", "1"))


@dataclass(slots=True)
class DotNode:
    name: str
    layout: str  # DOT attributes that affect the layout: label, shape
    style: NodeStyle
    # The tooltip in two parts: what stays the same across iterations (user text, escaped
    # once and cached) and the numbers of this iteration (our own text: nothing to escape).
    tip_static: str
    tip_values: str = ""
    lines: tuple[str, ...] = ()  # the label's lines, unescaped
    # A folded run's gradient strip: one fill per member ("" for no gradient), drawn
    # along the box's bottom edge.
    strip: tuple[str, ...] = ()
    link: str = ""  # a file this box opens (a folded module's own picture)

    @property
    def tooltip(self) -> str:
        return self.tip_static + self.tip_values

    @property
    def tooltip_dot(self) -> str:
        """The tooltip as a quoted DOT string."""
        return _dot_tip(self.tip_static)[:-1] + self.tip_values.replace("\n", "\\n") + '"'

    @property
    def tooltip_xml(self) -> str:
        """The tooltip escaped for XML text."""
        return _xml_tip(self.tip_static) + self.tip_values


@functools.lru_cache(maxsize=65536)
def _dot_tip(text: str) -> str:
    return dot_multiline(text)


@functools.lru_cache(maxsize=65536)
def _xml_tip(text: str) -> str:
    return xml_text(text)


@dataclass(slots=True)
class DotEdge:
    tail: str
    head: str
    layout: str
    style: EdgeStyle
    label: str = ""


@dataclass(slots=True)
class DotCluster:
    name: str
    label: str
    nodes: list[DotNode] = field(default_factory=list)
    children: list[DotCluster] = field(default_factory=list)


@dataclass(slots=True)
class DotDoc:
    """A graph ready to write: the model behind ``to_dot``'s text and ``layout_key``."""

    title: str
    legend: str  # an HTML-like label, or ""
    root: DotCluster
    edges: list[DotEdge]
    _order: list[DotNode] | None = None
    # The cached view shape this doc was drawn from (one view, no diff marks), if any: its
    # memo keeps the layout key, and the export's fast path starts from it.
    shape: _Shape | None = None

    def nodes(self) -> list[DotNode]:
        """Every node in the order it is written (the canonical order of the layout key)."""
        if self._order is None:
            out: list[DotNode] = []
            stack = [self.root]
            while stack:
                c = stack.pop()
                out.extend(c.nodes)
                stack.extend(reversed(c.children))
            self._order = out
        return self._order

    def text(self) -> str:
        out = ["digraph dyngraph {\n"]
        if self.title:
            out.append(f"  // {self.title}\n")
        out.append(_HEADER)
        if self.legend:
            out.append(f"  label={self.legend};\n  labelloc=b;\n  labeljust=l;\n")
        _write_cluster(self.root, out, "  ")
        for e in self.edges:
            attrs = ", ".join(a for a in (e.layout, e.style.dot) if a)
            out.append(f"  {e.tail} -> {e.head}{f' [{attrs}]' if attrs else ''};\n")
        out.append("}\n")
        return "".join(out)

    def layout_text(self) -> str:
        """The DOT text Graphviz needs for the layout alone: no colours, no tooltips.

        Nodes are always ``filled`` (so their outlines come back as closed shapes) and keep
        ``rounded`` when their style has it; everything else is painted per iteration.
        """
        out = ["digraph dyngraph {\n", _LAYOUT_HEADER]
        if self.legend:
            out.append(f"  label={self.legend};\n  labelloc=b;\n  labeljust=l;\n")
        _write_cluster(self.root, out, "  ", skeleton=True)
        for e in self.edges:
            out.append(f"  {e.tail} -> {e.head}{f' [{e.layout}]' if e.layout else ''};\n")
        out.append("}\n")
        return "".join(out)

    def layout_key(self) -> str:
        """A hash of everything that moves nodes, with names replaced by positions."""
        memo = self.shape.memo if self.shape is not None else None
        key = memo.get(self.legend) if memo is not None else None
        if key is None:
            key = self._layout_key()
            if memo is not None:
                memo[self.legend] = key
        return key

    def _layout_key(self) -> str:
        nodes = self.nodes()
        index = {n.name: i for i, n in enumerate(nodes)}
        parts = [self.legend]
        stack = [self.root]
        while stack:
            c = stack.pop()
            parts.append(f"C{c.label}\0{len(c.nodes)}\0{len(c.children)}")
            stack.extend(reversed(c.children))
        parts.extend(n.layout + ("\0r" if "rounded" in n.style.style else "") for n in nodes)
        parts.extend(f"{index[e.tail]}>{index[e.head]}{e.layout}" for e in self.edges)
        data = "\0\n".join(parts).encode("utf-8", "replace")
        return hashlib.blake2b(data, digest_size=16).hexdigest()


def _write_cluster(c: DotCluster, out: list[str], indent: str, skeleton: bool = False) -> None:
    for n in c.nodes:
        if skeleton:
            style = "" if "rounded" in n.style.style else ', style="filled"'
            out.append(f"{indent}{n.name} [{n.layout}{style}];\n")
            continue
        style = n.style.dot
        out.append(f'{indent}{n.name} [{n.layout}{", " if style else ""}{style}, '
                   f'tooltip={n.tooltip_dot}, id="{n.name}"];\n')
    for child in c.children:
        out.append(f"{indent}subgraph {child.name} {{\n")
        inner = indent + "  "
        out.append(f'{inner}label={dot_quote(child.label)}; labelloc=t; labeljust=l; '
                   f'id="{child.name}";\n{inner}{CLUSTER_STYLE}\n')
        _write_cluster(child, out, inner, skeleton)
        out.append(f"{indent}}}\n")


# -- building --------------------------------------------------------------------------

def _is_backward(graph: Graph) -> bool:
    return any(n.kind in ("backward", "accumulate") for n in graph.nodes.values())


def _as_kind(graph: Graph, kind: str) -> Graph:
    if kind == "backward" and not _is_backward(graph):
        return backward_graph(graph)
    return graph


def build_dot(
    graph: Graph,
    *,
    depth: int | None = None,
    diff_against: Graph | None = None,
    show_shapes: bool = False,
    fold_repeats: bool = False,
    graph_kind: str = "forward",
    legend: bool = True,
    grad_scale: GradScale | None = None,
    title: str | None = None,
    diff_legend: bool = False,
    cache: ViewCache | None = None,
    units: Mapping[int, Box] | None = None,
) -> DotDoc:
    """The model behind ``to_dot`` (same arguments); see ``DotDoc``.

    ``units`` (node id -> folded box, from ``exporters.modular``) draws module calls,
    runs and index groups as one box each, for a forward or backward graph.

    ``diff_legend`` shows the diff's legend rows even without ``diff_against`` (a batch
    keeps one legend on every page); ``cache`` reuses work across graphs of one structure.
    """
    if graph_kind not in GRAPH_KINDS:
        raise ValueError(f"graph_kind must be one of {GRAPH_KINDS}, got {graph_kind!r}")
    if depth is not None and depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    kinds = ("forward", "backward") if graph_kind == "both" else (graph_kind,)
    shown = [_as_kind(graph, k) for k in kinds]
    if grad_scale is None:
        grad_scale = GradScale.from_graphs(shown)
    both = graph_kind == "both"
    views = []
    for kind, g in zip(kinds, shown, strict=True):
        old = _as_kind(diff_against, kind) if diff_against is not None else None
        back = both and kind == "backward"
        views.append(build_view(
            g, depth=depth, fold_repeats=fold_repeats, diff_against=old,
            show_shapes=show_shapes, prefix="g" if back else "n", cache=cache,
            units=units if not both else None,
            cluster_prefix=("cluster_bwd_" if back else "cluster_fwd_") if both
            else "cluster_",
        ))
    if both:
        root = DotCluster("", "", children=[
            _cluster(views[0].root, grad_scale, "cluster_forward", "forward pass"),
            _cluster(views[1].root, grad_scale, "cluster_backward", "backward pass"),
        ])
    else:
        root = _cluster(views[0].root, grad_scale, "", "")
    edges = [_edge(e) for v in views for e in v.edges]
    legend_text = ""
    if legend and (grad_scale is not None or diff_against is not None or diff_legend
                   or any(n.has_nonfinite for g in shown for n in g.nodes.values())):
        legend_text = _legend(grad_scale, diff_against is not None or diff_legend)
    if title is None:
        title = f"dyngraph iteration {graph.iteration}, {_KIND_TITLES[graph_kind]}"
    # One view from a cached shape: the layout key is a function of the shape and legend.
    shape = views[0].shape if len(views) == 1 else None
    return DotDoc(title, legend_text, root, edges, shape=shape)


def to_dot(
    graph: Graph,
    *,
    depth: int | None = None,
    diff_against: Graph | None = None,
    show_shapes: bool = False,
    fold_repeats: bool = False,
    graph_kind: str = "forward",
    legend: bool = True,
    grad_scale: GradScale | None = None,
    title: str | None = None,
    cache: ViewCache | None = None,
) -> str:
    """DOT text of one iteration's graph; the same graph gives the same bytes.

    ``depth``: modules nested deeper than this collapse into one node each
    (``encoder.layers.3 (×37 ops)``); ``None`` draws every op. ``fold_repeats``: draw a
    run of identical sibling blocks once, labelled ``layers.0-11 ×12``. ``graph_kind``:
    ``"forward"``, ``"backward"`` (gradient flow, ``MulBackward0`` nodes) or ``"both"``.
    ``diff_against``: another iteration's graph; added nodes get a green border, reshaped
    ones orange, removed ones are drawn dashed and grey. ``grad_scale`` fixes the colour
    scale (a batch passes one scale for all iterations); by default it spans this graph.
    ``cache``: a ``ViewCache`` kept across calls makes graphs of a structure seen before
    cheaper (a debugger redrawing each iteration).

    >>> to_dot(graph, depth=1, diff_against=previous)  # doctest: +SKIP
    """
    return build_dot(
        graph, depth=depth, diff_against=diff_against, show_shapes=show_shapes,
        fold_repeats=fold_repeats, graph_kind=graph_kind, legend=legend,
        grad_scale=grad_scale, title=title, cache=cache,
    ).text()


def _cluster(vc: VCluster, scale: GradScale | None, name: str, label: str) -> DotCluster:
    out = DotCluster(name or vc.name, label or vc.label,
                     [_node(v, scale) for v in vc.nodes])
    out.children = [_cluster(child, scale, "", "") for child in vc.children]
    return out


def _edge(e: VEdge) -> DotEdge:
    layout = f"label={dot_quote(e.label)}" if e.label else ""
    return DotEdge(e.tail, e.head, layout, EDGE_GHOST if e.ghost else EDGE_PLAIN, e.label)


@functools.lru_cache(maxsize=65536)
def _layout_attrs(lines: tuple[str, ...], shape: str | None) -> str:
    return f"label={dot_lines(lines)}" + (f", shape={shape}" if shape else "")


def _node(v: VNode, scale: GradScale | None) -> DotNode:
    kind = v.members[0].kind if v.kind == "ghost" and v.members and not v.path else v.kind
    shape = "box3d" if v.path else SHAPES.get(kind)
    return DotNode(v.name, _layout_attrs(v.lines, shape), _style(v, kind, scale),
                   *_tooltip(v), v.lines, strip=_strip(v, scale), link=v.link)


def _strip(v: VNode, scale: GradScale | None) -> tuple[str, ...]:
    """Each member's fill by its parameters' largest gradient norm (every node's when it
    has no parameters); NaN/Inf red, "" for none."""
    if not v.strip:
        return ()
    by_id = {m.id: m for m in v.members}
    out = []
    for member in v.strip:
        nodes = [by_id[i] for i in member if i in by_id]
        params = [n for n in nodes if n.kind == "param" and n.grad is not None]
        norm, bad = None, False
        for n in params or nodes:
            g = n.grad
            if g is None or g.norm is None:
                continue
            if not g.finite or not math.isfinite(g.norm):
                bad = True
            elif norm is None or g.norm > norm:
                norm = g.norm
        out.append(colors.NONFINITE_FILL if bad else
                   scale.fill(norm) if scale is not None and norm is not None else "")
    return tuple(out)


_BASE_STYLE = {"param": "filled,bold", "accumulate": "filled,bold", "leaf": "filled",
               "module": "filled"}
_MARKS = {"added": colors.ADDED, "reshaped": colors.RESHAPED, "changed": colors.CHANGED}


def _style(v: VNode, kind: str, scale: GradScale | None) -> NodeStyle:
    if v.kind == "ghost":
        return NodeStyle.of("rounded,dashed" if kind in OP_KINDS else "dashed", "#ffffff",
                            colors.GHOST, colors.GHOST)
    if v.strip:  # a run: its strip tells its members' gradients apart, not one fill
        return paint(_BASE_STYLE.get(kind, "rounded,filled"), [], v.mark, scale)
    return paint(_BASE_STYLE.get(kind, "rounded,filled"), v.members, v.mark, scale)


def paint(base: str, members: list[GraphNode], mark: str, scale: GradScale | None
          ) -> NodeStyle:
    """The style of a drawn node standing for ``members`` (``base``: its style flags)."""
    norm = None
    inf_value = False
    for m in members:
        value = m.summary
        if value is not None and value.nan:
            return NodeStyle.of(base, colors.NONFINITE_FILL, colors.NONFINITE_BORDER,
                                "#ffffff", "3")
        if value is not None and value.inf:
            # ±inf in a forward value is often meant (an attention mask): marked by the
            # border only, so a real NaN still stands out.
            inf_value = True
        # (a backward node with several outputs: the largest of their gradients)
        for g in m.grads or (m.grad,):
            if g is None:
                continue
            if g.nan or g.inf or (g.norm is not None and not math.isfinite(g.norm)):
                # (a sampled summary may miss the NaN itself but not its norm)
                return NodeStyle.of(base, colors.NONFINITE_FILL, colors.NONFINITE_BORDER,
                                    "#ffffff", "3")
            if g.norm is not None and (norm is None or g.norm > norm):
                norm = g.norm
    fill = "#ffffff" if norm is None or scale is None else scale.fill(norm)
    border = colors.NONFINITE_FILL if inf_value else _MARKS.get(mark)
    return NodeStyle.of(base, fill, border or "#333333", colors.font_for(fill),
                        "3" if border else "1")


def _stats(s: Summary) -> str:
    norm, mean, std, lo, hi = s.norm, s.mean, s.std, s.min, s.max
    if s.nan == 0 and s.inf == 0 and not s.sampled:  # the common cases, in one format each
        if None not in (norm, mean, std, lo, hi):
            # %-formatting: a third faster than five f-string fields, and this runs twice
            # per node per iteration.
            return "norm=%.4g mean=%.4g std=%.4g min=%.4g max=%.4g" % (  # noqa: UP031
                norm, mean, std, lo, hi)
        if norm is not None and mean is None and std is None and lo is None and hi is None:
            return f"norm={norm:.4g}"
    parts = [f"{k}={v:.4g}" for k, v in (("norm", norm), ("mean", mean), ("std", std),
                                           ("min", lo), ("max", hi)) if v is not None]
    if s.nan:
        parts.append(f"NaN×{s.nan}")
    if s.inf:
        parts.append(f"Inf×{s.inf}")
    return " ".join(parts) + (" (sampled)" if s.sampled else "")


def _tooltip(v: VNode) -> tuple[str, str]:
    """(the lines that stay the same across iterations, this iteration's numbers)."""
    if v.path:  # a collapsed module (or the ghost of one, or index arithmetic)
        ops = sum(1 for m in v.members if m.kind in OP_KINDS)
        what = ("integer index arithmetic, no gradient flows through it"
                if v.path.startswith("index ops") else f"module: {clean(v.path)}")
        static = f"{what}\n{counted(len(v.members), 'node')}, {counted(ops, 'op')}"
    else:
        n = v.members[0]
        static = _static_tooltip(n.kind, n.op, n.label, n.name, n.shape, n.dtype, n.module,
                                 n.file, n.line, n.function, n.grad_fn)
    values = tip_values(v.members, bool(v.path))
    if v.mark == "added":
        values += "\nadded since the previous graph"
    elif v.mark == "reshaped" and v.old_shape is not None:
        values += f"\nshape changed from {fmt_shape(v.old_shape)}"
    elif v.mark == "changed":
        values += "\nchanged since the previous graph"
    elif v.mark == "removed":
        values += "\nremoved since the previous graph"
    return static, values


def tip_values(members: list[GraphNode], module: bool) -> str:
    """The tooltip lines with this iteration's numbers (our own text: nothing to escape)."""
    values = ""
    if module:
        norms = [m.grad.norm for m in members if m.grad is not None and m.grad.norm is not None]
        if norms:
            values += f"\nlargest grad norm: {max(norms):.4g}"
        bad = sum(1 for m in members if m.has_nonfinite)
        if bad:
            values += f"\n{bad} nodes with NaN/Inf"
        return values
    n = members[0]
    if n.summary is not None and n.kind not in ("backward", "accumulate"):
        values += "\nvalue: " + _stats(n.summary)
    if n.grads:  # one gradient per output of the op (split's pieces ...)
        for k, g in enumerate(n.grads):
            values += f"\ngrad of output {k}: " + ("none" if g is None else _stats(g))
    elif n.grad is not None:
        values += "\ngrad: " + _stats(n.grad)
    return values


@functools.lru_cache(maxsize=65536)
def _static_tooltip(kind: str, op: str, label: str, name: str, shape: tuple[int, ...],
                    dtype: str, module: str, file: str, line: int, function: str,
                    grad_fn: str) -> str:
    """The lines of a node's tooltip that do not change from one iteration to the next.

    Each line is made one line with ``clean``: a name holding a newline must not add a
    line of its own ("grad: all fine") to the tooltip.
    """
    lines = [op if kind in OP_KINDS else label]
    if kind == "accumulate" and name:
        lines.append(f"accumulates into: {name}")
    lines.append(f"shape: {fmt_shape(shape)} {dtype}")
    if module:
        lines.append(f"module: {module}")
    if file:
        lines.append(f"at: {file}:{line}" + (f" in {function}" if function else ""))
    if kind == "op" and grad_fn:
        lines.append(f"grad_fn: {grad_fn}")
    return "\n".join(clean(line) for line in lines)


def _legend(scale: GradScale | None, diff: bool) -> str:
    rows = []
    if scale is not None:
        rows.append('<tr><td colspan="2" align="left">gradient norm (log scale)</td></tr>')
        for fill, text in scale.legend():
            rows.append(_swatch(fill, html_text(text)))
        rows.append(_swatch(colors.ZERO_GRAD, "zero"))
        rows.append(_swatch(colors.NO_GRAD, "no gradient"))
    rows.append(_swatch(colors.NONFINITE_FILL, "NaN (or Inf in a gradient)"))
    rows.append(_swatch("#ffffff", "Inf in a value", colors.NONFINITE_FILL))
    if diff:
        rows.append(_swatch("#ffffff", "added", colors.ADDED))
        rows.append(_swatch("#ffffff", "shape or inputs changed", colors.RESHAPED))
        rows.append(_swatch("#ffffff", "removed (dashed)", colors.GHOST))
    return ('<<table border="0" cellborder="0" cellspacing="2" cellpadding="1">'
            + "".join(rows) + "</table>>")


def _swatch(fill: str, text: str, border: str = "#333333") -> str:
    return (f'<tr><td bgcolor="{fill}" color="{border}" border="1" width="14" height="10">'
            f'</td><td align="left">{text}</td></tr>')
