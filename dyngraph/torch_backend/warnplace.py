"""Warnings raised inside a captured call, placed where the plain run places them.

Python places a warning at a frame: the caller of the C function that warned (PyTorch's C++
warnings), or ``stacklevel`` frames up (``warnings.warn`` in PyTorch's Python code). A
captured call has the capture's handler between the script and the function, so that
frame was ``dyngraph/torch_backend/forward.py``: ``-W`` and ``filterwarnings`` choices by
module or line saw dyngraph, and Python's once-per-place default hid every later warning
of the same text from other lines of the script.

While capturing:

- one filter, first in the list, lets every warning placed in ``dyngraph.torch_backend``
  through (``always``): none is dropped or shown on dyngraph's account;
- ``warnings._showwarnmsg`` (what the warnings machinery calls to show one) is wrapped: a
  warning placed in dyngraph is warned again, with ``warnings.warn_explicit``, at the frame
  the plain run would have placed it at: the caller of the function the handler ran for
  (for a Python function PyTorch routed through ``handle_torch_function``: the caller of
  that function). Every filter, ``-W`` option, registry and ``catch_warnings`` of the
  script's then applies to it as in a plain run.

Nothing of this runs per op: only when something warns.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any

import torch.overrides

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep
_OVERRIDES = os.path.abspath(torch.overrides.__file__)
_MODULE = r"dyngraph\.torch_backend(\.|$)"


class WarningPlaces:
    """Installs the filter and the wrapper; ``handler`` is the capture mode's
    ``__torch_function__`` (its frame stands where the script's call was)."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler.__code__
        self._filter: Any = None
        self._show: Any = None

    def install(self) -> None:
        if self._show is not None:
            return
        warnings.filterwarnings("always", module=_MODULE)
        self._filter = warnings.filters[0]
        original = warnings._showwarnmsg  # type: ignore[attr-defined]
        places = self

        def _showwarnmsg(msg: Any) -> None:
            frame = places.plain_frame(msg.filename, msg.lineno)
            if frame is None:  # (not placed in dyngraph: this is where it belongs)
                original(msg)
                return
            g = frame.f_globals
            warnings.warn_explicit(
                msg.message, msg.category, frame.f_code.co_filename, frame.f_lineno,
                module=g.get("__name__", "<string>"),
                registry=g.setdefault("__warningregistry__", {}), module_globals=g,
                source=msg.source)

        _showwarnmsg._dyngraph_original = original  # type: ignore[attr-defined]
        self._show = _showwarnmsg
        warnings._showwarnmsg = _showwarnmsg  # type: ignore[attr-defined]

    def remove(self) -> None:
        if self._show is None:
            return
        if warnings._showwarnmsg is self._show:  # type: ignore[attr-defined]
            warnings._showwarnmsg = self._show._dyngraph_original  # type: ignore[attr-defined]
        try:
            warnings.filters.remove(self._filter)  # type: ignore[attr-defined]
            warnings._filters_mutated()  # type: ignore[attr-defined]
        except ValueError:  # the script reset the filters meanwhile
            pass
        self._show = self._filter = None

    def plain_frame(self, filename: str, lineno: int) -> FrameType | None:
        """The frame a plain run places a warning at that Python placed at dyngraph's
        ``filename:lineno``; None when it was not placed in dyngraph."""
        if not _ours(filename):
            return None
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and not (frame.f_code.co_filename == filename
                                         and frame.f_lineno == lineno):
            frame = frame.f_back
        if frame is None:
            return None
        if frame.f_code is self._handler:
            frame = frame.f_back
            if frame is not None and frame.f_code.co_filename == _OVERRIDES:
                while frame is not None and frame.f_code.co_filename == _OVERRIDES:
                    frame = frame.f_back  # handle_torch_function ...
                frame = frame.f_back if frame is not None else None  # ... and its caller
        while frame is not None and _ours(frame.f_code.co_filename):
            frame = frame.f_back  # any other frame of dyngraph's: the first one outside
        return frame


def _ours(filename: str) -> bool:
    """A file of dyngraph's own (the bundled demos are the user's code)."""
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_DEMOS_DIR)
