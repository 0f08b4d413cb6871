"""The viewer: one interactive page for a trace, behind three doors.

- ``export``'s ``index.html`` carries the page with its data inside
  (``dyngraph.exporters.html``);
- the notebook widget (``%%dyngraph``, ``dyngraph.show()``; ``viewer.notebook``);
- ``dyngraph view --web TRACE`` serves it on loopback with a token (``viewer.server``).

The page is the same everywhere (``viewer.page``), fed the same parts (``viewer.data``);
only the transport differs. Its scripts and style ship in ``viewer/static``.
"""

from __future__ import annotations

from .data import ViewerData
from .page import page_html

__all__ = ["ViewerData", "page_html"]
