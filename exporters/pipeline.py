"""Which layout draws a graph: Graphviz when it can, dyngraph's own when it cannot.

One policy for the debugger's canvas and the exporters, so neither is ever left without a
picture:

- a graph where Graphviz has no chance goes straight to ``layered_layout``: its time grows
  with nodes times ranks (measured with graphviz-pure: chains of 500, 1,000 and 2,000
  ranks took 0.8, 1.5 and 4.2 s; the shared-weight residual loop, 2,884 boxes on 1,923
  ranks, 6 s; a GRU over 300 tokens, 2,702 boxes on ~500 ranks, over 5 s), so past
  ``HOPELESS`` boxes x ranks, ``DEEP_RANKS`` ranks or ``MAX_BOXES`` boxes it is not tried
  (Graphviz's time also grows with crossings, which no count predicts: past these it
  missed a 5 s budget more often than not);
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

DEEP_RANKS = 1500
HOPELESS = 1_200_000  # boxes x ranks
MAX_BOXES = 2000
EXPORT_BUDGET = 5.0  # seconds Graphviz may take on one export layout
FAST_ABOVE = 1500  # above this many drawn nodes Graphviz runs with FAST_ARGS

T = TypeVar("T")


def too_deep(names: Sequence[str], edges: Sequence[tuple[str, str]],
             budget: float = EXPORT_BUDGET) -> str:
    """Why Graphviz is not worth trying on this graph within ``budget`` seconds, or ""."""
    ranks = longest_path(names, edges) + 1
    share = min(budget / EXPORT_BUDGET, 1.0)  # the limits are for the export's budget
    if ranks > DEEP_RANKS * share or ranks * len(names) > HOPELESS * share or (
            len(names) > MAX_BOXES * share):
        return (f"{len(names)} boxes on {ranks} ranks: more than Graphviz lays out in "
                "seconds")
    return ""


def choose(names: Sequence[str], edges: Sequence[tuple[str, str]],
           graphviz: Callable[[], T], layered: Callable[[str], T], budget: float
           ) -> tuple[T, str]:
    """``graphviz()`` unless the graph is too deep or it fails; else ``layered(note)``.

    Returns the result and the note ("" when Graphviz drew it).
    """
    reason = too_deep(names, edges, budget)
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
