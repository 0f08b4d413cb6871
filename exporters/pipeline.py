"""Which layout draws a graph: Graphviz when it can, dyngraph's own when it cannot.

One policy for the debugger's canvas and the exporters, so neither is ever left without a
picture:

- a graph deeper than ``DEEP_RANKS`` ranks goes straight to ``layered_layout``: Graphviz's
  time grows with depth far faster than with width (measured: a 2,000-rank chain 4.2 s,
  the 1,939-node shared-weight residual loop 6 s even with its leaves copied);
- otherwise Graphviz gets ``budget`` seconds (bounded in memory, see ``render``); when it
  runs past that or fails, ``layered_layout`` takes over;
- either way the caller learns which drew it (``note``: "" for Graphviz), to say so on
  the picture.

>>> template, note = svg_template(doc, dot=None, budget=5.0)   # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

from .dot import DotDoc
from .fallback import fallback_layout_json
from .layered import longest_path
from .render import FAST_ARGS, GraphvizError, LayoutTimeout, run_dot
from .svg import SvgTemplate

DEEP_RANKS = 600
EXPORT_BUDGET = 5.0  # seconds Graphviz may take on one export layout
FAST_ABOVE = 1500  # above this many drawn nodes Graphviz runs with FAST_ARGS

T = TypeVar("T")


def too_deep(names: Sequence[str], edges: Sequence[tuple[str, str]]) -> str:
    """Why Graphviz is not worth trying on this graph, or ""."""
    ranks = longest_path(names, edges) + 1
    if ranks > DEEP_RANKS:
        return f"{ranks} ranks deep: more than Graphviz lays out in seconds"
    return ""


def choose(names: Sequence[str], edges: Sequence[tuple[str, str]],
           graphviz: Callable[[], T], layered: Callable[[str], T], budget: float
           ) -> tuple[T, str]:
    """``graphviz()`` unless the graph is too deep or it fails; else ``layered(note)``.

    Returns the result and the note ("" when Graphviz drew it).
    """
    reason = too_deep(names, edges)
    if not reason:
        try:
            return graphviz(), ""
        except LayoutTimeout:
            reason = f"Graphviz took longer than {budget:g} s"
        except GraphvizError as exc:
            reason = str(exc).rstrip(".")
    note = f"drawn by dyngraph's layered layout: {reason}"
    return layered(note), note


def svg_template(doc: DotDoc, *, dot: str | os.PathLike[str] | None, budget: float
                 ) -> tuple[SvgTemplate, str]:
    """The geometry of ``doc``'s picture and the note saying which layout drew it."""
    nodes = doc.nodes()

    def graphviz() -> SvgTemplate:
        args = ["-Tjson", *(FAST_ARGS if len(nodes) > FAST_ABOVE else ())]
        return SvgTemplate(doc, run_dot(doc.layout_text(), args, dot=dot, timeout=budget))

    def layered(note: str) -> SvgTemplate:
        return SvgTemplate(doc, fallback_layout_json(doc, note))

    return choose([n.name for n in nodes], [(e.tail, e.head) for e in doc.edges],
                  graphviz, layered, budget)
