"""numpy's floating-point warnings, told at the user's line instead of the engine's.

``x / 0`` on a tensor makes numpy warn ``RuntimeWarning: divide by zero encountered in
divide``, and Python places a warning at the innermost Python frame: a line of dyngraph's
engine (``dyngraph/engine/ops.py:170``), which means nothing to the user and, since Python
shows a warning once per place, hid every later one behind the first. Here such a warning
is moved to the first frame outside dyngraph (the user's ``train.py:12``, as PyTorch's own
warnings point at user code) and names the op: ``... encountered in divide (op div)``.

Nothing of this runs per op: ops are not wrapped in ``np.errstate`` (that would cost every
op a context manager). The work happens only when numpy warns, the rare path:

- one filter, appended after every other (so the user's own ``-W``/``filterwarnings``
  choices, ``ignore`` and ``error`` included, come first), lets RuntimeWarnings raised in
  dyngraph's modules through each time instead of once per engine line;
- ``warnings.showwarning`` is wrapped: a RuntimeWarning placed inside dyngraph is placed
  at the user's frame instead and shown once per user line, message and op, which is what
  Python's default action does for warnings raised at the user's line.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any, TextIO

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_DEMOS_DIR = _PACKAGE_DIR + "demos" + os.sep  # shipped inside the package, yet user code
# numpy's own Python code warns too ("Mean of empty slice", from an op's np.mean)
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_MAX_SHOWN = 10_000  # places remembered; past this they are forgotten (shown again)

_shown: set[tuple[str, int, str]] = set()
_installed = False


def install() -> None:
    """Route engine RuntimeWarnings to the user's line (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    warnings.filterwarnings("always", category=RuntimeWarning, module=r"dyngraph\.",
                            append=True)
    previous = warnings.showwarning

    def showwarning(message: Warning | str, category: type[Warning], filename: str,
                    lineno: int, file: TextIO | None = None, line: str | None = None) -> None:
        if issubclass(category, RuntimeWarning) and _library(filename):
            moved = _at_user_line(str(message))
            if moved is None:
                return  # shown at this user line before
            if moved:
                filename, lineno, text = moved
                message, line = category(text), None  # line: read from the user's file
        previous(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def _inside(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_DEMOS_DIR)


def _library(filename: str) -> bool:
    return _inside(filename) or filename.startswith(_NUMPY_DIR)


def _at_user_line(text: str) -> tuple[str, int, str] | tuple[()] | None:
    """(file, line, text naming the op) of the user's frame; () when the warning is not
    dyngraph's (numpy used directly) or there is no user frame (it stays where it was);
    None when this place already showed this warning."""
    frame: FrameType | None = sys._getframe(2)
    op = ""
    ours = False
    while frame is not None and not _library(frame.f_code.co_filename):
        frame = frame.f_back  # the warnings machinery's own frames
    while frame is not None and _library(frame.f_code.co_filename):
        if _inside(frame.f_code.co_filename):
            ours = True
            op = op or _op_of(frame)
        frame = frame.f_back
    if frame is None or not ours:
        return ()
    # The op is part of the text: an op and its backward on one line warn apart.
    place = (frame.f_code.co_filename, frame.f_lineno, f"{text} ({op})" if op else text)
    if place in _shown:
        return None
    if len(_shown) >= _MAX_SHOWN:
        _shown.clear()
    _shown.add(place)
    return place


def _op_of(frame: FrameType) -> str:
    """"op div" in ``apply()``, "backward of op div" in the backward pass, else ""."""
    name = frame.f_code.co_name
    if name not in ("apply", "_apply_binary", "run_backward"):
        return ""
    local: Any = frame.f_locals  # a snapshot; read only on this rare path
    if name != "run_backward":
        op = getattr(local.get("op"), "name", "")
        return f"op {op}" if op else ""
    op = getattr(getattr(local.get("node"), "op", None), "name", "")
    return f"backward of op {op}" if op else ""
