"""``index.html``: the exported iterations in the viewer page (``dyngraph.viewer``).

The same interactive page as ``dyngraph view --web`` and the notebook widget: iterations
on a slider with the structure changes marked, the graph folded by module, the inspector,
search, the diff, the first NaN/Inf. Its data is inside the page, so it opens from the
folder with no server and no network; each iteration's exported files (and module pages)
are linked from the panel, and listed for a browser without scripts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dyngraph.viewer import ViewerData, page_html

from dyngraph.capture.graph import Graph

from .escape import html_text


def index_html(iterations: Sequence[Any], graphs: Sequence[Graph], *,
               graph_kind: str = "forward") -> str:
    """The page for ``IterationInfo`` records (``index``, ``files``, ``changed``, ...) and
    the forward graph each was drawn from."""
    changed = sum(1 for it in iterations if it.changed)
    title = (f"dyngraph: {len(iterations)} iterations, {graph_kind} graph, "
             f"{changed} with a changed structure")
    data = ViewerData.from_graphs(
        graphs, graph_kind="backward" if graph_kind == "backward" else "forward",
        files=[list(it.files) for it in iterations],
        pages=[list(getattr(it, "modules", ())) for it in iterations], title=title)
    return page_html(data.everything(), title=title, extra=_noscript(iterations))


def _noscript(iterations: Sequence[Any]) -> str:
    """The files, for a browser that runs no script."""
    rows = []
    for it in iterations:
        links = " ".join(f'<a href="{html_text(f)}">{html_text(f)}</a>' for f in it.files)
        rows.append(f"<tr><td>{it.index}</td><td>{it.nodes}</td><td>{links}</td></tr>")
    return ("<noscript><table><tr><th>iteration</th><th>nodes</th><th>files</th></tr>"
            + "".join(rows) + "</table></noscript>")
