"""Where things happened: the words of pause descriptions and post-mortem reports.

Every description names the op, its module, the iteration and ``file:line`` (relative to
the working directory when below it, else to the script's folder), so a one-paragraph
report is enough to find the spot.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ..capture import events as ev
from ..capture.paths import display_path
from ..capture.tracing import tracer
from .frames import is_user_file

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
    return f"{e.op} -> {tuple(e.shape)} {module} at {at} ({iteration_name(e.iteration)})"


def iteration_name(index: int) -> str:
    """``iteration 3``; iteration 0 is the run's setup (``dyngraph.capture.tracing``)."""
    return f"iteration {index}" if index else "iteration 0, setup"


def where(file: str, line: int) -> str:
    """``file:line`` with the file relative to the working directory when it is below it,
    else as a shared trace names it (relative to the recorded script's folder,
    ``<site-packages>/…``: ``capture.paths``), else as it is."""
    if not file:
        return "?"
    rel = os.path.relpath(file) if os.path.isabs(file) else file
    if rel.startswith(".."):
        script = tracer.run_info[0] if tracer.run_info is not None else ""
        rel = display_path(file, os.path.dirname(os.path.abspath(script))) if script else file
    return f"{rel}:{line}"


def first_line(message: str, limit: int = 300) -> str:
    """An exception's message as one line of a report: its first line, at most ``limit``
    characters (PyTorch's dispatcher errors list every backend in kilobytes of text; the
    traceback keeps it all)."""
    lines = message.strip().splitlines()
    text = lines[0] if lines else ""
    if len(text) > limit:
        return text[:limit] + "..."
    return text + (" ..." if len(lines) > 1 else "")


def counts(nan: int, inf: int) -> str:
    parts = [f"{nan} NaN"] if nan else []
    if inf:
        parts.append(f"{inf} Inf")
    return " and ".join(parts) or "non-finite values"


@dataclass(frozen=True, slots=True)
class Raised:
    """Where an exception came from, read off its traceback.

    ``op``: the op that raised inside ``apply`` (None outside one); ``call``: the innermost
    dyngraph function that raised outside an op (``linear`` for a shape check in
    ``F.linear``); ``module_class``: the class of the innermost module whose ``forward`` was
    running (``Linear``); ``file``/``line``: the innermost frame of the user's code (not
    dyngraph's, not a library's such as PyTorch's: see ``frames.is_user_file``; the
    innermost frame outside dyngraph when no frame is the user's); ``in_backward``: raised
    during a backward pass. (dyngraph's own failures never get here: the capture reports
    them itself, in a note, and the script goes on.)
    """

    op: str | None = None
    call: str = ""
    module_class: str = ""
    file: str = ""
    line: int = 0
    in_backward: bool = False


def locate_exception(tb: TracebackType | None) -> Raised:
    """Where the exception with traceback ``tb`` was raised (see ``Raised``).

    The op is read from ``tensor.apply``'s frame, the location from the innermost frame
    outside the dyngraph package. (The module path comes from ``ModuleStack``.)
    """
    op = None
    call = module_class = ""
    file, line = "", 0
    user_file, user_line = "", 0
    in_backward = False
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        name = code.co_name
        if name == "run_backward" and code.co_filename.endswith("autograd.py"):
            in_backward = True
        if name == "forward":
            owner = frame.f_locals.get("self")
            if owner is not None and hasattr(owner, "_parameters"):  # a Module, duck-typed
                module_class = type(owner).__name__
        if code.co_filename.startswith(_PACKAGE_DIR):
            if name == "apply" and code.co_filename.endswith("tensor.py"):
                op = getattr(frame.f_locals.get("op"), "name", op)
            elif not name.startswith("_") and name not in _PLUMBING:
                call = name
        else:
            file, line = code.co_filename, tb.tb_lineno
            if is_user_file(file):
                user_file, user_line = file, line
            call = ""  # a call into dyngraph counts only when the user's code is outside it
        tb = tb.tb_next
    if user_file:
        file, line = user_file, user_line
    return Raised(op, call, module_class, file, line, in_backward)


# Frames every call into a module or an op passes through: never "the failing call".
_PLUMBING = frozenset({"forward", "apply", "run_backward", "backward", "<lambda>", "<module>",
                       "<genexpr>", "<listcomp>", "wrapper", "inner"})
