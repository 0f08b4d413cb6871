"""Where things happened: the words of pause descriptions and post-mortem reports.

Every description names the op, its module, the iteration and ``file:line`` (relative to
the working directory when below it), so a one-paragraph report is enough to find the spot.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

from ..capture import events as ev

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class ModuleStack(list):  # type: ignore[type-arg]
    """``tracer.module_stack`` in the debugged process. A plain list that also remembers the
    module an exception left first (the innermost one, where it was raised), because by the
    time the script's exception reaches us every module scope has been popped."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.exception: BaseException | None = None
        self.raised_in = ""

    def pop(self, index: Any = -1) -> Any:
        path = list.pop(self, index)
        exc = sys.exc_info()[1]
        if exc is not None and exc is not self.exception:
            self.exception = exc
            self.raised_in = path
        return path

    def module_of(self, exc: BaseException) -> str | None:
        return self.raised_in if exc is self.exception else None


def describe_op(e: ev.Op) -> str:
    """``matmul -> (64, 10) in module fc2 at train.py:12 (iteration 3)``."""
    module = f"in module {e.module}" if e.module else "at top level"
    at = where(e.file, e.line)
    return f"{e.op} -> {tuple(e.shape)} {module} at {at} (iteration {e.iteration})"


def where(file: str, line: int) -> str:
    """``file:line`` with the file relative to the working directory when it is below it."""
    if not file:
        return "?"
    rel = os.path.relpath(file) if os.path.isabs(file) else file
    return f"{file if rel.startswith('..') else rel}:{line}"


def counts(nan: int, inf: int) -> str:
    parts = [f"{nan} NaN"] if nan else []
    if inf:
        parts.append(f"{inf} Inf")
    return " and ".join(parts) or "non-finite values"


def locate_exception(tb: TracebackType | None) -> tuple[str | None, str, int, bool]:
    """(op that raised or None, user file, user line, in backward) from a traceback.

    The op is read from ``tensor.apply``'s frame, the location from the innermost frame
    outside the dyngraph package. (The module comes from ``ModuleStack``.)
    """
    op = None
    file, line = "", 0
    in_backward = False
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code.co_name == "run_backward" and code.co_filename.endswith("autograd.py"):
            in_backward = True
        if code.co_filename.startswith(_PACKAGE_DIR):
            if code.co_name == "apply" and code.co_filename.endswith("tensor.py"):
                op = getattr(frame.f_locals.get("op"), "name", op)
        else:
            file, line = code.co_filename, tb.tb_lineno
        tb = tb.tb_next
    return op, file, line, in_backward
