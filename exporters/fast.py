"""The export's fast path: DOT and SVG of a graph shaped like one already drawn.

Once an iteration has been drawn the ordinary way (view -> ``DotDoc`` -> text, and a
``SvgTemplate`` for its layout), every later iteration with the same shape (same ops,
shapes, names, modules and wiring; only ids and values differ) is written from
precompiled per-node format strings: its own names, colours and tooltip numbers go in,
nothing else is worked out again. The output is byte for byte what ``DotDoc.text()`` and
``SvgTemplate.render()`` give for that iteration (a test holds it to that).

Only plain drawings take this path: one graph kind (not ``both``) and no diff marks.
"""

from __future__ import annotations

from dyngraph.capture.graph import GraphNode

from .colors import GradScale
from .dot import (
    _HEADER,
    CLUSTER_STYLE,
    EDGE_PLAIN,
    DotCluster,
    DotDoc,
    _dot_tip,
    _xml_tip,
    paint,
    tip_values,
)
from .escape import dot_quote
from .svg import SvgTemplate, _braces
from .view import _Shape, copy_name


class FastPath:
    """Writes graphs with ``shape`` like ``doc`` (their representative) was written."""

    def __init__(self, doc: DotDoc, shape: _Shape, rep_ordered: list[GraphNode], prefix: str,
                 scale: GradScale | None, template: SvgTemplate | None) -> None:
        self.shape, self.prefix, self.scale, self.template = shape, prefix, scale, template
        rep_names = [fixed or copy_name(f"{prefix}{rep_ordered[positions[0]].id}", copy)
                     for fixed, _, _, _, _, positions, copy in shape.vnodes]
        where = {name: j for j, name in enumerate(rep_names)}
        nodes = doc.nodes()
        self.order = [where[n.name] for n in nodes]  # canonical position -> vnode index
        self.base = [n.style.style for n in nodes]
        self.tip_dot = [_dot_tip(n.tip_static)[:-1] for n in nodes]  # without the end quote
        self.tip_xml = [_xml_tip(n.tip_static) for n in nodes]
        self.dot_fmts: list[str] = []
        self.dot_parts: list[str | int] = []
        self.legend = doc.legend
        self._compile(doc.root, "  ")
        # doc.edges were made from the view's edges, in the shape's order
        self.edges = [(t, h, f" [{e.layout}]" if e.layout else "")
                      for (t, h, _), e in zip(shape.edges, doc.edges, strict=True)]

    def _compile(self, c: DotCluster, indent: str) -> None:
        """The DOT text as static pieces and node slots, in ``DotDoc.text()``'s order."""
        for n in c.nodes:
            self.dot_parts.append(len(self.dot_fmts))
            self.dot_fmts.append(f"{indent}{{0}} [{_braces(n.layout)}{{1}}, tooltip={{2}}, "
                                 f'id="{{0}}"];\n')
        for child in c.children:
            inner = indent + "  "
            self.dot_parts.append(
                f"{indent}subgraph {child.name} {{\n"
                f'{inner}label={dot_quote(child.label)}; labelloc=t; labeljust=l; '
                f'id="{child.name}";\n{inner}{CLUSTER_STYLE}\n')
            self._compile(child, inner)
            self.dot_parts.append(f"{indent}}}\n")

    def render(self, ordered: list[GraphNode], title: str, svg: bool = True
               ) -> tuple[str, str | None]:
        """(DOT text, SVG text or None) of the graph whose nodes in seq order are ``ordered``."""
        vnodes = self.shape.vnodes
        names: list[str] = [""] * len(vnodes)
        dot_nodes: list[str] = []
        svg_nodes: list[str] = []
        node_fmts = self.template._node_fmts if svg and self.template is not None else None
        prefix, scale = self.prefix, self.scale
        for i, j in enumerate(self.order):
            fixed, _, _, _, path, positions, copy = vnodes[j]
            members = [ordered[p] for p in positions]
            name = names[j] = fixed or copy_name(f"{prefix}{members[0].id}", copy)
            style = paint(self.base[i], members, "", scale)
            values = tip_values(members, bool(path))
            extra = f", {style.dot}" if style.dot else ""
            dot_nodes.append(self.dot_fmts[i].format(
                name, extra, self.tip_dot[i] + values.replace("\n", "\\n") + '"'))
            if node_fmts is not None:
                svg_nodes.append(node_fmts[i].format(name, self.tip_xml[i] + values,
                                                     style.svg_fill, style.svg_stroke,
                                                     style.fontcolor))
        out = ["digraph dyngraph {\n"]
        if title:
            out.append(f"  // {title}\n")
        out.append(_HEADER)
        if self.legend:
            out.append(f"  label={self.legend};\n  labelloc=b;\n  labeljust=l;\n")
        out.extend(dot_nodes[p] if isinstance(p, int) else p for p in self.dot_parts)
        out.extend(f"  {names[t]} -> {names[h]}{attrs};\n" for t, h, attrs in self.edges)
        out.append("}\n")
        if node_fmts is None or self.template is None:
            return "".join(out), None
        edge_fmts = self.template._edge_fmts
        stroke, color = EDGE_PLAIN.svg_stroke, EDGE_PLAIN.color
        svg_edges = [edge_fmts[k].format(names[t], names[h], stroke, color)
                     for k, (t, h, _) in enumerate(self.edges) if edge_fmts[k]]
        return "".join(out), self.template.assemble(title, svg_edges, svg_nodes)
