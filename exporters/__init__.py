"""dyngraph.exporters: DOT and SVG pictures of each iteration's graph.

>>> from dyngraph.exporters import to_dot, render, layout     # doctest: +SKIP
>>> svg = render(to_dot(trace.iterations[0].graph, depth=2))  # doctest: +SKIP

``to_dot`` is pure; ``render``/``layout`` run the ``graphviz-pure`` binary (or the ``dot``
chosen with ``dot=`` / ``$DYNGRAPH_DOT``); ``export_iterations`` writes a directory of
``iter-0001.dot``/``.svg`` files and an ``index.html``; ``IterationExporter`` writes them
one iteration at a time as a run goes (reusing layouts between calls).
"""

from .batch import ExportResult, IterationExporter, IterationInfo, export_iterations
from .colors import GradScale
from .dot import DotDoc, build_dot, to_dot
from .render import (
    EdgePath,
    GraphvizError,
    Layout,
    LayoutTimeout,
    NodeBox,
    find_dot,
    layout,
    render,
)
from .svg import SvgTemplate
from .view import ViewCache

__all__ = [
    "DotDoc",
    "EdgePath",
    "ExportResult",
    "GradScale",
    "GraphvizError",
    "IterationExporter",
    "IterationInfo",
    "Layout",
    "LayoutTimeout",
    "NodeBox",
    "SvgTemplate",
    "ViewCache",
    "build_dot",
    "export_iterations",
    "find_dot",
    "layout",
    "render",
    "to_dot",
]
